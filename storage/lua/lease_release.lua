-- Release a lease only if this holder still has it (its token), so a lease that expired
-- and was taken by someone else is left to them. KEYS: 1 lease. ARGV: 1 token.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
