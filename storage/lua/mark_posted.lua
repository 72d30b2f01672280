-- Record where an interrupt was posted; take it out of the outbox; index its channel.
-- Audited once per message: the same message marked again (the call sent again after its
-- reply was lost, or the outbox recording a post whose mark failed) is not a new post.
-- KEYS as in common.lua. ARGV: 1 record id, 2 channel, 3 message ts, 4 thread ts,
-- 5 now, 6 audit maxlen, 7 the message's permalink ('' when not known yet).
-- Returns {status, '', record hash...}; status posted|unknown.
local key, rid, channel = KEYS[1], ARGV[1], ARGV[2]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'unknown', ''} end
redis.call('ZREM', KEYS[6], rid)
local old = field(key, 'channel')
local again = old == channel and field(key, 'message_ts') == ARGV[3]
if field(key, 'state') == 'pending' then
  if old ~= '' then redis.call('ZREM', KEYS[8], channel_member(key, rid, old)) end
  redis.call('ZADD', KEYS[8], 0, channel_member(key, rid, channel))
end
redis.call('HSET', key, 'channel', channel, 'message_ts', ARGV[3], 'thread_ts', ARGV[4])
redis.call('HDEL', key, 'post_error', 'post_failed_by')
if ARGV[7] ~= '' then redis.call('HSET', key, 'permalink', ARGV[7]) end
if not again then audit(KEYS[10], ARGV[6], 'posted', rid, '', ARGV[5], '') end
return with_record({'posted', ''})
