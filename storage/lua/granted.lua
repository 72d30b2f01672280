-- The trust grant that the "Approve and trust" of record ARGV[1] made is stored (or was not
-- to be): its run's resume job, held back for it (see finalize), is appended now when no
-- other interrupt of the run is pending or waits for its grant. Once per record: a second
-- call (a decider taking the click over, a call sent again after its reply was lost) finds
-- it taken out already and appends nothing.
-- KEYS as in common.lua, plus 12: the run's records waiting for their grant (granting_key).
-- ARGV: 1 record id, 2 now, 3 retention ms, 4 resume stream maxlen.
-- Returns {job's stream id, or ''}.
-- Its due entry, which hands it out again while the grant is not stored (expire.lua), goes.
redis.call('ZREM', KEYS[4], ARGV[1])
if redis.call('SREM', KEYS[12], ARGV[1]) == 0 then return {''} end
if redis.call('SCARD', KEYS[2]) > 0 or redis.call('SCARD', KEYS[12]) > 0 then return {''} end
local decided = redis.call('SMEMBERS', KEYS[11])
if #decided == 0 then return {''} end  -- the run was cancelled meanwhile: nothing resumes
redis.call('DEL', KEYS[11])
return {resume_job(decided, ARGV[2], tonumber(ARGV[3]), ARGV[4])}
