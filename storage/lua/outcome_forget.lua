-- Forget a job's outcome report whose rest failed, if it is still the one taken: the run's
-- end mark and outcome go in one step, and the report is kept aside as forgotten, so the
-- report taken next withdraws its audit entry if it is another one.
-- KEYS: 1 the run's end mark, 2 its job hash. ARGV: 1 the report's digest.
local stored = redis.call('GET', KEYS[1])
if not stored or string.sub(stored, 1, #ARGV[1] + 1) ~= ARGV[1] .. ' ' then return 0 end
redis.call('DEL', KEYS[1])
local outcome = redis.call('HGET', KEYS[2], 'outcome')
redis.call('HDEL', KEYS[2], 'outcome')
if outcome then
  redis.call('HSET', KEYS[2], 'forgotten', ARGV[1] .. ' ' .. string.match(outcome, '^%S+ (.*)$'))
end
return 1
