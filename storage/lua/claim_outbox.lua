-- Lease up to ARGV[2] outbox entries due by ARGV[1] for ARGV[3] ms; KEYS[1] the outbox.
-- A claimer that fails to post simply lets the lease lapse, and the entry comes back.
local ids = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
local until_ms = tonumber(ARGV[1]) + tonumber(ARGV[3])
for _, id in ipairs(ids) do redis.call('ZADD', KEYS[1], until_ms, id) end
return ids
