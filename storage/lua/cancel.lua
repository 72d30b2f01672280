-- Cancel one pending interrupt of a run that is being stopped; no resume job follows.
-- KEYS as in common.lua. ARGV: 1 record id, 2 by (user id or ''), 3 now,
-- 4 decision json (a rejection carrying the reason), 5 retention ms, 6 audit maxlen.
-- Returns {status}; status is cancelled|skip.
local key, rid = KEYS[1], ARGV[1]
if field(key, 'state') ~= 'pending' then return {'skip'} end
-- A decision held in its undo window never takes effect now (the audit trail keeps it).
redis.call('HDEL', key, 'held_until', 'held_by', 'held_at', 'held_decision')
finalize(rid, 'cancelled', ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), false, 0)
audit(KEYS[10], ARGV[6], 'cancelled', rid, ARGV[2], ARGV[3], ARGV[4])
return {'cancelled'}
