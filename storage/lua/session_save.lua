-- Compare-and-set a thread's snapshot. KEYS[1] the session hash.
-- ARGV: 1 expected version (0 = must not exist), 2 snapshot json, 3 ttl ms, 4 this save's
-- token: the same save sent again (its reply was lost) finds its own write and succeeds.
-- Returns {1, new version} or {0, stored version}.
local stored = tonumber(redis.call('HGET', KEYS[1], 'version') or '0')
if stored == tonumber(ARGV[1]) + 1 and redis.call('HGET', KEYS[1], 'saved_by') == ARGV[4] then
  return {1, stored}
end
if stored ~= tonumber(ARGV[1]) then return {0, stored} end
redis.call('HSET', KEYS[1], 'version', stored + 1, 'snapshot', ARGV[2], 'saved_by', ARGV[4])
if tonumber(ARGV[3]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[3]) end
return {1, stored + 1}
