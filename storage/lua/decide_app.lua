-- Record a decision made in the app that runs the agent (an AG-UI client's resume). The
-- app resumes the run itself, so no resume job follows. The first answer wins: a record
-- already decided (in Slack, or by the app) is refused. Until the run has nothing
-- pending, the record waits in the run's decided set like a click's: if a click decides
-- the run's last card before the app's resume does, its resume job applies this one too.
-- KEYS as in common.lua.
-- ARGV: 1 record id, 2 by (the app's name), 3 decision type, 4 decision json, 5 now,
-- 6 retention ms, 7 audit maxlen.
-- Returns {status, '', record hash...}; status recorded|already_decided|expired|unknown
-- (expired: past its expiry, not yet swept; only a denial is taken then).
local key, rid = KEYS[1], ARGV[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'unknown', ''} end
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
if redis.call('SCARD', KEYS[2]) > 0 then
  redis.call('SADD', KEYS[11], rid)
  redis.call('PEXPIRE', KEYS[11], decided_keep(tonumber(ARGV[6])))
else
  redis.call('DEL', KEYS[11])  -- the app's resume applies this round itself
end
audit(KEYS[10], ARGV[7], 'decided_in_app', rid, ARGV[2], ARGV[5], ARGV[4])
return with_record({'recorded', ''})
