-- Lease outbox entry ARGV[1] (the outbox KEYS[1], its record KEYS[2]) to this caller from
-- now (ARGV[2] ms) for ARGV[3] ms, only if it is still due when its last failed post left
-- it (`outbox_waits`): a claim or hold since then moved it, and its holder posts it.
-- ARGV[4]: this call's token, kept as `outbox_claimed_by` (the same call sent again after
-- its reply was lost finds its own claim, not a claim of nobody's).
-- Returns 1 when leased, else 0.
local waits = field(KEYS[2], 'outbox_waits')
if waits == '' and field(KEYS[2], 'outbox_claimed_by') == ARGV[4] then
  local due = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
  if due == tonumber(ARGV[2]) + tonumber(ARGV[3]) then return 1 end
end
if waits == '' or redis.call('ZSCORE', KEYS[1], ARGV[1]) ~= waits then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
redis.call('HDEL', KEYS[2], 'outbox_waits')
redis.call('HSET', KEYS[2], 'outbox_claimed_by', ARGV[4])
return 1
