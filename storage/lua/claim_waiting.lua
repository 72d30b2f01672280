-- Lease outbox entry ARGV[1] (the outbox KEYS[1], its record KEYS[2]) to this caller from
-- now (ARGV[2] ms) for ARGV[3] ms, only if it is still due when its last failed post left
-- it (`outbox_waits`): a claim or hold since then moved it, and its holder posts it.
-- Returns 1 when leased, else 0.
local waits = field(KEYS[2], 'outbox_waits')
if waits == '' or redis.call('ZSCORE', KEYS[1], ARGV[1]) ~= waits then return 0 end
redis.call('ZADD', KEYS[1], tonumber(ARGV[2]) + tonumber(ARGV[3]), ARGV[1])
redis.call('HDEL', KEYS[2], 'outbox_waits')
return 1
