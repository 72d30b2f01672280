-- Keep the link to a posted interrupt's message, unless the record is gone meanwhile.
-- KEYS: 1 record. ARGV: 1 permalink. Returns 1 when stored, 0 when the record is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'permalink', ARGV[1])
return 1
