-- Append an audit entry once per ARGV[1] (a tool call id) of the run whose hash of marks
-- is KEYS[1], kept ARGV[2] ms; to the audit stream KEYS[2] (and KEYS[3], the request
-- events, when given), capped near ARGV[3] entries; ARGV[4..] the entry's field, value
-- pairs. Returns the entry's id, or '' when it was appended before.
if redis.call('HSETNX', KEYS[1], ARGV[1], '1') == 0 then return '' end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local entry = {}
for i = 4, #ARGV do entry[#entry + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(entry))
if KEYS[3] then redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[3], '*', unpack(entry)) end
return id
