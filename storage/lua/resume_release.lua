-- Give up resume job ARGV[1] without acknowledging it, so it is reclaimed and retried.
-- KEYS: 1 run lease. ARGV: 1 job id, 2 consumer.
if redis.call('GET', KEYS[1]) == ARGV[1] .. ' ' .. ARGV[2] then
  return redis.call('DEL', KEYS[1])
end
return 0
