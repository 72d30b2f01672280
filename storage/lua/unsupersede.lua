-- Undo the mark of supersede.lua: the interrupt that was to ask again (ARGV[2]) was
-- not made (refused, or its creation failed), so the approved interrupt was not asked
-- again after all.
-- KEYS as in common.lua.
-- ARGV: 1 record id, 2 the record id of the interrupt not made, 3 now, 4 audit maxlen.
-- Returns {'undone'}, or {'skip'} when the mark was not ARGV[2]'s (or the record is gone).
local key, rid = KEYS[1], ARGV[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'skip'} end
if field(key, 'superseded_by') ~= ARGV[2] then return {'skip'} end
redis.call('HDEL', key, 'superseded_by', 'superseded_at')
audit(KEYS[10], ARGV[4], 'ask_again_refused', rid, '', ARGV[3], ARGV[2])
return {'undone'}
