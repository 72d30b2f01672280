-- Take one due reminder, exactly once, and schedule the next from the policy's offsets
-- (never sooner after this one than the offsets are apart).
-- KEYS as in common.lua. ARGV: 1 record id, 2 now, 3 this call's token (the same call
-- sent again after its reply was lost is handed the same reminder).
-- Returns {status, reminder number, record hash...}; status is due|skip.
local key, rid, now = KEYS[1], ARGV[1], tonumber(ARGV[2])
if redis.call('EXISTS', key) == 0 or field(key, 'state') ~= 'pending' then
  redis.call('ZREM', KEYS[5], rid)
  return {'skip', ''}
end
if field(key, 'reminded_by') == ARGV[3] then
  return with_record({'due', field(key, 'reminder_index')})
end
local at = field(key, 'next_reminder_at')
if at == '' or now < tonumber(at) then return {'skip', ''} end
local held = field(key, 'held_until')
if held ~= '' then  -- decided, in its undo window: nobody needs reminding unless it is undone
  redis.call('ZADD', KEYS[5], held, rid)
  return {'skip', ''}
end
local policy = json_field(key, 'policy')
local index = tonumber(field(key, 'reminder_index')) + 1
local offset = policy.reminders[index + 1]
local nxt = ''
if offset then
  local when = tonumber(field(key, 'created_at')) + math.floor(offset * 1000)
  -- A reminder handed out late (moved to working hours) keeps its spacing to the next one.
  local gap = math.floor((offset - policy.reminders[index]) * 1000)
  if when < now + gap then when = now + gap end
  local expires = field(key, 'expires_at')
  if expires == '' or when < tonumber(expires) then nxt = string.format('%d', when) end
end
redis.call('HSET', key, 'reminder_index', index, 'next_reminder_at', nxt, 'reminded_by', ARGV[3])
if nxt == '' then redis.call('ZREM', KEYS[5], rid) else redis.call('ZADD', KEYS[5], nxt, rid) end
return with_record({'due', tostring(index)})
