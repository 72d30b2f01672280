-- Record where an interrupt was posted; index its channel; take it out of the outbox,
-- unless the card of the escalation step it reached is not in Slack yet: it still waits.
-- Audited once per message: the same message marked again (the call sent again after its
-- reply was lost, or the outbox recording a post whose mark failed) is not a new post.
-- KEYS as in common.lua, plus 12 the run's place (where its first card's thread is, and
-- each card, for when a record is lost).
-- ARGV: 1 record id, 2 channel, 3 message ts, 4 thread ts,
-- 5 now, 6 audit maxlen, 7 the message's permalink ('' when not known yet).
-- Returns {status, '', record hash...}; status posted|unknown.
local key, rid, channel = KEYS[1], ARGV[1], ARGV[2]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'unknown', ''} end
local old = field(key, 'channel')
local again = old == channel and field(key, 'message_ts') == ARGV[3]
local pending = field(key, 'state') == 'pending'
if pending and old ~= '' then unindex_channel(KEYS[8], key, rid, old) end
redis.call('HSET', key, 'channel', channel, 'message_ts', ARGV[3], 'thread_ts', ARGV[4])
-- After the record names its channel: a step open to "its channel" means this one now.
if pending then index_channel(KEYS[8], key, rid, channel) end
redis.call('HDEL', key, 'post_error', 'post_failed_by')
if ARGV[7] ~= '' then redis.call('HSET', key, 'permalink', ARGV[7]) end
if redis.call('EXISTS', KEYS[12]) == 1 then
  if field(KEYS[12], 'thread_ts') == '' then
    local root = ARGV[4] ~= '' and ARGV[4] or ARGV[3]
    redis.call('HSET', KEYS[12], 'channel', channel, 'thread_ts', root)
  end
  redis.call('HSET', KEYS[12], 'card:' .. rid, channel .. ' ' .. ARGV[3])
end
local step = tonumber(field(key, 'escalated')) or 0
if not pending or step <= (tonumber(field(key, 'escalation_posted')) or 0) then
  redis.call('ZREM', KEYS[6], rid)
end
if not again then audit(KEYS[10], ARGV[6], 'posted', rid, '', ARGV[5], '') end
return with_record({'posted', ''})
