-- Record a decision made in the app that runs the agent (an AG-UI client's resume). The
-- first answer wins: a record already decided (in Slack, or by the app) is refused. Until
-- the run has nothing pending, the record waits in the run's decided set like a click's:
-- if a click decides the run's last card before the app's resume does, its resume job
-- applies this one too. When this decides the last card, the app runs the round itself:
-- no resume job follows while the app holds the round (KEYS[12], until ARGV[8]); if it
-- lets go without finishing, the round is handed to the resume worker (hand_over.lua).
-- The round's records move from the run's decided set to KEYS[13], so the next round's
-- decisions start from an empty set whatever the app does.
-- KEYS as in common.lua, then 12 the shard's app rounds, 13 this record's app round.
-- ARGV: 1 record id, 2 by (the app's name), 3 decision type, 4 decision json, 5 now,
-- 6 retention ms, 7 audit maxlen, 8 until when the app holds the round (ms), 9 this
-- decision's token: the same call sent again (its reply was lost) gets the first answer.
-- Returns {status, '', record hash...}; status recorded (others still pending),
-- recorded_last (the app now holds the round), already_decided, expired or unknown
-- (expired: past its expiry, not yet swept; only a denial is taken then).
local key, rid = KEYS[1], ARGV[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'unknown', ''} end
if field(key, 'state') ~= 'pending' and field(key, 'decided_in_app_as') == ARGV[9] then
  local held = redis.call('ZSCORE', KEYS[12], rid)
  return with_record({held and 'recorded_last' or 'recorded', ''})
end
-- A decision held in its undo window was the first answer, unless it is undone.
if field(key, 'state') ~= 'pending' or field(key, 'held_until') ~= '' then
  return with_record({'already_decided', ''})
end
local expires = field(key, 'expires_at')
if ARGV[3] ~= 'reject' and expires ~= '' and tonumber(ARGV[5]) >= tonumber(expires) then
  return with_record({'expired', ''})
end
local state = FINALS[ARGV[3]]
finalize(rid, state, ARGV[2], ARGV[5], ARGV[4], tonumber(ARGV[6]), false, 0)
redis.call('HSET', key, 'decided_in_app_as', ARGV[9])
redis.call('SADD', KEYS[11], rid)
redis.call('PEXPIRE', KEYS[11], decided_keep(tonumber(ARGV[6])))
audit(KEYS[10], ARGV[7], 'decided_in_app', rid, ARGV[2], ARGV[5], ARGV[4])
if redis.call('SCARD', KEYS[2]) > 0 then return with_record({'recorded', ''}) end
redis.call('RENAME', KEYS[11], KEYS[13])
redis.call('ZADD', KEYS[12], ARGV[8], rid)
return with_record({'recorded_last', ''})
