-- Queue note ARGV[3] in the sorted set KEYS[2] at score ARGV[4] (the end of the lease its
-- caller posts it under) if this call is the first to mark KEYS[1] (token ARGV[1], kept
-- ARGV[2] ms). The same call sent again (its reply lost) is still the first. 1 if first.
local mark = redis.call('GET', KEYS[1])
if mark then
  if mark == ARGV[1] then return 1 end
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
redis.call('ZADD', KEYS[2], ARGV[4], ARGV[3])
return 1
