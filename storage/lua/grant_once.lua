-- Keep trust grant ARGV[2] (its JSON, id ARGV[1]) in hash KEYS[1] unless the request
-- that makes it made one before: KEYS[2] holds that grant's id for ARGV[3] ms. Answers
-- 1 when this grant is kept (also to this call sent again after its reply was lost).
local kept = redis.call('GET', KEYS[2])
if kept then return kept == ARGV[1] and 1 or 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
redis.call('SET', KEYS[2], ARGV[1], 'PX', ARGV[3])
return 1
