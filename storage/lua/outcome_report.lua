-- Take a job's outcome report: the run's end mark and the outcome in one step, so a report
-- is kept whole or not at all. KEYS: 1 the run's end mark, 2 its job hash.
-- ARGV: 1 the mark ("<report digest> <token of this call>"), 2 "<ms> <outcome JSON>",
-- 3 how long (ms) both are kept.
-- Returns the mark that stands: ARGV[1] when this call's report was taken.
local stored = redis.call('GET', KEYS[1])
if stored then return stored end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
redis.call('HSET', KEYS[2], 'outcome', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return ARGV[1]
