-- Move refusal ARGV[1]'s lease on the untold refusals KEYS[1] from its end ARGV[2] to
-- ARGV[3], if ARGV[2] is still its end: its teller is still telling it (Slack slow, or a
-- rate limit slept out), so no other process claims it meanwhile. One taken off (told)
-- or queued again (its click refused again) is left as it is. Returns 1 when moved.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
  return 1
end
return 0
