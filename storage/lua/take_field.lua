-- Remove field ARGV[1] of hash KEYS[1] and answer its value ('' when it had none). KEYS[2]
-- keeps the value this call took ARGV[2] ms, so the call sent again (its reply lost) is
-- answered with it, not told there was nothing to remove.
local taken = redis.call('GET', KEYS[2])
if taken then return taken end
local value = redis.call('HGET', KEYS[1], ARGV[1])
if not value then return '' end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('SET', KEYS[2], value, 'PX', ARGV[2])
return value
