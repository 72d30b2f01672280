-- Keep where an escalated interrupt's escalation card was posted: a copy whose clicks
-- decide it. The previous step's card, if any, is kept among the earlier copies.
-- KEYS: 1 record, 2 outbox (where a card Slack did not take waits), 3 the run's place
-- (kept only for an agent's run: each escalation card is listed there too, for when the
-- record is lost), 4 audit stream. ARGV: 1 channel, 2 message ts, 3 now, 4 audit maxlen,
-- 5 the escalation step the card is of (kept as the highest step posted).
-- A card of the step reached that Slack refused before is audited as posted now, its
-- refusal cleared.
-- Returns 1 when stored, 0 when the record is gone or was never escalated.
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 or (tonumber(redis.call('HGET', key, 'escalated')) or 0) < 1 then
  return 0
end
local channel = redis.call('HGET', key, 'escalation_channel') or ''
local ts = redis.call('HGET', key, 'escalation_ts') or ''
if ts ~= '' and not (channel == ARGV[1] and ts == ARGV[2]) then
  local raw = redis.call('HGET', key, 'escalation_cards') or ''
  local cards = {}
  if raw ~= '' then cards = cjson.decode(raw) end
  cards[#cards + 1] = {channel, ts}
  redis.call('HSET', key, 'escalation_cards', cjson.encode(cards))
end
redis.call('HSET', key, 'escalation_channel', ARGV[1], 'escalation_ts', ARGV[2])
local step = tonumber(ARGV[5])
if step > (tonumber(field(key, 'escalation_posted')) or 0) then
  redis.call('HSET', key, 'escalation_posted', ARGV[5])
end
if field(key, 'escalation_error') ~= '' and step == tonumber(field(key, 'escalated')) then
  redis.call('HDEL', key, 'escalation_error')
  audit(KEYS[4], ARGV[4], 'escalation_posted', field(key, 'id'), '', ARGV[3],
    'step ' .. field(key, 'escalated'))
end
if redis.call('EXISTS', KEYS[3]) == 1 then
  local name = 'escalation:' .. redis.call('HGET', key, 'id')
  local raw = redis.call('HGET', KEYS[3], name) or ''
  local listed = {}
  if raw ~= '' then listed = cjson.decode(raw) end
  local card = ARGV[1] .. ' ' .. ARGV[2]
  local known = false
  for _, each in ipairs(listed) do known = known or each == card end
  if not known then
    listed[#listed + 1] = card
    redis.call('HSET', KEYS[3], name, cjson.encode(listed))
  end
end
-- Out of the outbox, unless the request's own card is not in Slack yet: it still waits.
if field(key, 'message_ts') ~= '' then redis.call('ZREM', KEYS[2], field(key, 'id')) end
return 1
