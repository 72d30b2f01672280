-- Queue the resume job of a round the app answered but did not run to its end (its run
-- failed, or its thread was busy, after its answers were recorded "in the app"): the
-- resume worker runs it, with retries. KEYS as in common.lua for the round's first record,
-- then 12.. the keys of its other records. ARGV: 1 record id, 2 now, 3 retention ms,
-- 4 stream maxlen, 5.. the other records' ids (in the order of their keys).
-- Returns {status, job id}: queued; waiting when a card of the run is still pending (its
-- click queues the job with the app's answers, which wait in the run's decided set); or
-- undecided when a record given is not decided (nothing is queued).
local round = {ARGV[1]}
for i = 5, #ARGV do round[#round + 1] = ARGV[i] end
local keys = {KEYS[1]}
for i = 12, #KEYS do keys[#keys + 1] = KEYS[i] end
for _, key in ipairs(keys) do
  local state = redis.call('HGET', key, 'state')
  if not state or state == 'pending' then return {'undecided', ''} end
end
if redis.call('SCARD', KEYS[2]) > 0 then return {'waiting', ''} end
return {'queued', resume_job(round, ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))}
