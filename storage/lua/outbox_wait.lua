-- Put record ARGV[1] (KEYS[2]) in the outbox KEYS[1], due at ARGV[2] ms, after a failed
-- post of its escalation step's card, and note that due time on the record as
-- `outbox_waits` (no poster holds it while the entry keeps it: claim_waiting.lua).
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
if redis.call('EXISTS', KEYS[2]) == 1 then
  redis.call('HSET', KEYS[2], 'outbox_waits', redis.call('ZSCORE', KEYS[1], ARGV[1]))
end
return 1
