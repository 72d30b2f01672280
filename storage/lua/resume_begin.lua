-- May this consumer apply resume job ARGV[1] to the run's session version ARGV[2]?
-- KEYS: 1 run lease, 2 run applied-versions hash. ARGV: 1 job id, 2 version,
-- 3 consumer, 4 lease ms. Returns 'go', 'done' (already applied: just ack) or 'busy'.
if redis.call('HEXISTS', KEYS[2], 'job:' .. ARGV[1]) == 1
  or redis.call('HEXISTS', KEYS[2], 'version:' .. ARGV[2]) == 1 then
  return 'done'
end
local holder = ARGV[1] .. ' ' .. ARGV[3]
if redis.call('SET', KEYS[1], holder, 'NX', 'PX', ARGV[4]) then return 'go' end
if redis.call('GET', KEYS[1]) == holder then
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
  return 'go'
end
return 'busy'
