-- Hand the round an app holds (decide_app.lua) to the resume worker: the app's run failed,
-- or the app let its hold lapse (its process died). Queues the round's resume job, once: a
-- round already handed over or finished by the app is left alone.
-- KEYS as in common.lua for the record that closed the round, then 12 the shard's app
-- rounds, 13 the round's records. ARGV: 1 record id, 2 now, 3 retention ms, 4 stream maxlen,
-- 5 this call's token (the same call sent again after its reply was lost is answered as
-- the first time).
-- Returns the job's stream id, or '' when the app no longer held the round.
local mine = ARGV[5] .. ' '
local before = field(KEYS[1], 'round_let_go_by')
if string.sub(before, 1, #mine) == mine then return string.sub(before, #mine + 1) end
if redis.call('ZREM', KEYS[12], ARGV[1]) == 0 then return '' end
local round = redis.call('SMEMBERS', KEYS[13])
redis.call('DEL', KEYS[13])
if #round == 0 then return '' end
local job = resume_job(round, ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]))
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'round_let_go_by', mine .. job)
end
return job
