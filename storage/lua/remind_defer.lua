-- Put back a reminder just taken (number ARGV[2]) to be handed out again at ARGV[3] ms,
-- when the record is still pending, no later reminder was taken meanwhile, and ARGV[3] is
-- before its expiry. KEYS: 1 record, 2 reminders index. ARGV: 1 record id, 2 number,
-- 3 when (ms). Returns 'deferred' or 'skip'.
local key, rid, number, at = KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('EXISTS', key) == 0 or field(key, 'state') ~= 'pending' then return 'skip' end
-- This very call, sent again after its reply was lost: it deferred the reminder.
if tonumber(field(key, 'reminder_index')) == number - 1
  and field(key, 'next_reminder_at') == ARGV[3] then
  return 'deferred'
end
if tonumber(field(key, 'reminder_index')) ~= number then return 'skip' end
local expires = field(key, 'expires_at')
if expires ~= '' and at >= tonumber(expires) then return 'skip' end
redis.call('HSET', key, 'reminder_index', number - 1, 'next_reminder_at', ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], rid)
return 'deferred'
