-- Lease up to ARGV[2] members of the sorted set KEYS[1] due by ARGV[1] for ARGV[3] ms (the
-- outbox, the group checks). A claimer that fails simply lets the lease lapse, and the
-- member comes back.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local until_ms = tonumber(ARGV[1]) + tonumber(ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], until_ms, id) end
return ids
