-- Take refusal ARGV[1] off the untold refusals KEYS[1] (and its reason off KEYS[2]) if its
-- score is still ARGV[2], the end of the lease its teller was given: one queued again
-- meanwhile (its click refused again) stays.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[2], ARGV[1])
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
