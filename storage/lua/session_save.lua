-- Compare-and-set a thread's snapshot. KEYS[1] the session hash.
-- ARGV: 1 expected version (0 = must not exist), 2 snapshot json, 3 ttl ms.
-- Returns {1, new version} or {0, stored version}.
local stored = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if stored ~= tonumber(ARGV[1]) then return {0, stored} end
redis.call('HSET', KEYS[1], 'version', stored + 1, 'snapshot', ARGV[2])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, stored + 1}
