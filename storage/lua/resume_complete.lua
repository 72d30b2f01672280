-- Mark resume job ARGV[1] applied (the run's new snapshot is saved), release the lease
-- and acknowledge the stream entry, atomically.
-- KEYS: 1 run lease, 2 run applied hash, 3 resume stream. ARGV: 1 job id, 2 version the
-- job resumed from, 3 consumer, 4 group, 5 applied-marker ttl ms.
redis.call('HSET', KEYS[2], 'job:' .. ARGV[1], ARGV[2], 'version:' .. ARGV[2], ARGV[1])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if redis.call('GET', KEYS[1]) == ARGV[1] .. ' ' .. ARGV[3] then redis.call('DEL', KEYS[1]) end
return redis.call('XACK', KEYS[3], ARGV[4], ARGV[1])
