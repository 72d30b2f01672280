-- Append an audit entry to the stream KEYS[2] (and KEYS[3], the request events, when
-- given), capped near ARGV[2] entries; ARGV[3..] the entry's field, value pairs. KEYS[1]
-- keeps the entry's id ARGV[1] ms, so the call sent again (its reply lost) is answered
-- with it instead of adding the entry twice. Returns the entry's id.
local appended = redis.call('GET', KEYS[1])
if appended then return appended end
local entry = {}
for i = 3, #ARGV do entry[#entry + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', unpack(entry))
if KEYS[3] then redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[2], '*', unpack(entry)) end
redis.call('SET', KEYS[1], id, 'PX', ARGV[1])
return id
