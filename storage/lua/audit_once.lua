-- Append an audit entry once per ARGV[1] (a tool call id) of the run whose hash of marks
-- is KEYS[1], kept ARGV[2] ms; to the audit stream KEYS[2] (and KEYS[3], the request
-- events, when given), capped near ARGV[3] entries; ARGV[4] this call's token (the same
-- call sent again after its reply was lost is answered as the first time); ARGV[5..] the
-- entry's field, value pairs. Returns the entry's id, or '' when it was appended before.
local mine = ARGV[4] .. ' '
if redis.call('HSETNX', KEYS[1], ARGV[1], mine) == 0 then
  local before = redis.call('HGET', KEYS[1], ARGV[1])
  if string.sub(before, 1, #mine) == mine then return string.sub(before, #mine + 1) end
  return ''
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
local entry = {}
for i = 5, #ARGV do entry[#entry + 1] = ARGV[i] end
local id = redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', unpack(entry))
if KEYS[3] then redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[3], '*', unpack(entry)) end
redis.call('HSET', KEYS[1], ARGV[1], mine .. id)
return id
