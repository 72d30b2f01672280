-- Move member ARGV[1]'s lease on the sorted set KEYS[1] (a queue scored by when another
-- process may claim each entry) from its end ARGV[2] to ARGV[3], if ARGV[2] is still its
-- end: its claimer is still handing it to Slack (Slack slow, or a rate limit slept out),
-- so no other process claims it meanwhile. One taken off (done) or queued again is left as
-- it is. Returns 1 when moved.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then
  redis.call('ZADD', KEYS[1], 'XX', ARGV[3], ARGV[1])
  return 1
end
return 0
