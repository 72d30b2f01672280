-- Renew a lease only while this holder still has it (its token), in one step: a lease that
-- lapsed and was taken by someone else is left to them. KEYS: 1 lease. ARGV: 1 token,
-- 2 how long it lasts (ms). Returns 1 when renewed, 0 when it is no longer this holder's.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return 0
