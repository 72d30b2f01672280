-- Replace the resolved members of a pending interrupt's user groups (a group changed
-- since the interrupt was posted) and re-index who may decide it. KEYS as in
-- common.lua. ARGV: 1 record id, 2 policy json, 3 now, 4 audit maxlen, 5 user asking.
-- Returns {status, '', record hash...}; status updated|not_pending|unknown. Audited when
-- the members changed: the same members stored again (the call sent again after its
-- reply was lost) are not a refresh.
local key, rid = KEYS[1], ARGV[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'unknown', ''} end
if field(key, 'state') ~= 'pending' then return {'not_pending', ''} end
local changed = field(key, 'policy') ~= ARGV[2]
zset_many('ZREM', KEYS[7], user_members(key, rid, false))
redis.call('HSET', key, 'policy', ARGV[2])
zset_many('ZADD', KEYS[7], user_members(key, rid, true))
if changed then audit(KEYS[10], ARGV[4], 'approvers_refreshed', rid, ARGV[5], ARGV[3], '') end
return with_record({'updated', ''})
