-- Undo a decision held in its undo window (by its decider or any approver): the interrupt
-- waits for a decision again, its votes cleared. Once the window has ended the decision
-- stands; the due sweep (expire.lua) makes it final, and exactly one of the two wins.
-- KEYS as in common.lua. ARGV: 1 record id, 2 user, 3 now, 4 audit maxlen, 5 channel and
-- 6 message ts of the card clicked (the interrupt's card or one of its escalation cards).
-- Returns {status, reason, record as a JSON object}; status undone|refused.
local key, rid, user, now = KEYS[1], ARGV[1], ARGV[2], ARGV[3]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then
  return {'refused', 'unknown', ''}
end
local function refuse(reason) return {'refused', reason, record_json(key)} end
-- This very click, sent again after its reply was lost: it undid the decision.
if field(key, 'undone_by') == user and field(key, 'undone_at') == now then
  return {'undone', '', record_json(key)}
end
if field(key, 'state') ~= 'pending' then return refuse('already_decided') end
local held = field(key, 'held_until')
if held == '' then return refuse('not_held') end
if tonumber(now) >= tonumber(held) then return refuse('window_closed') end
local ts = ARGV[6]
local on_card = ARGV[5] == field(key, 'channel') and ts == field(key, 'message_ts')
local on_escalation = ts ~= '' and ARGV[5] == field(key, 'escalation_channel')
  and ts == field(key, 'escalation_ts')
-- The earlier steps' escalation cards still decide, so they undo too.
if not on_escalation and ts ~= '' and field(key, 'escalation_cards') ~= '' then
  for _, card in ipairs(json_field(key, 'escalation_cards')) do
    if card[1] == ARGV[5] and card[2] == ts then on_escalation = true end
  end
end
if not (on_card or on_escalation) then return refuse('wrong_message') end
local by = field(key, 'held_by')
local policy = json_field(key, 'policy')
if user ~= by and not is_approver(key, policy, user, on_card, on_escalation and ARGV[5] or nil)
then
  return refuse('not_allowed')
end
-- The requester (or their stand-in) may not undo others' decisions on their own request,
-- any more than decide it: they could hold it open until someone kinder decides.
if user ~= by and one_voice(policy, user, field(key, 'requested_by'))
  and not policy.allow_self_approval then
  return refuse('self_approval')
end
-- Whose decision it was: a quorum's every approver (their votes are cleared with it).
local voters, undid = json_field(key, 'voters'), by
if #voters > 1 then undid = table.concat(voters, ' ') end
audit(KEYS[10], ARGV[4], 'undone', rid, user, now, undid)
local undone_type = json_field(key, 'held_decision').type or ''
-- A trust grant's approval was nobody's click: the undo says so (`undone_trust`).
local trust = field(key, 'trust_grant')
redis.call('HDEL', key, 'held_until', 'held_by', 'held_at', 'held_decision', 'held_granting',
  'trust_grant', 'trust_until', 'undone_trust', 'undone_lapsed')
redis.call('HSET', key, 'votes', '[]', 'voters', '[]', 'undone_by', user, 'undone_at', now,
  'undid', undid, 'undone_type', undone_type)
if trust ~= '' then redis.call('HSET', key, 'undone_trust', trust) end
local expires = field(key, 'expires_at')
if expires ~= '' then redis.call('ZADD', KEYS[4], expires, rid) else redis.call('ZREM', KEYS[4], rid) end
return {'undone', '', record_json(key)}
