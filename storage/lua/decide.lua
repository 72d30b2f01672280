-- Record one person's decision on a pending interrupt (KEYS as in common.lua, plus
-- 12: optional marker of the click stream entry being decided).
-- ARGV: 1 record id, 2 user, 3 decision type, 4 decision json, 5 vote json, 6 args digest,
--       7 now, 8 channel ('' = not checked), 9 message ts, 10 retention ms,
--       11 resume stream maxlen, 12 audit maxlen, 13 this call's token, 14 '' and
--       15 the trust grant whose granter's approval it is (kept as `trust_grant`), if any,
--       16 'hold' when the caller stores a trust grant for this decision next: the run's
--       resume waits for it (granted.lua), 17 with a trust grant: when it ends (ms); its
--       shard's revoked grants are then the last key (refused as trust_ended if it is one),
--       18 with a click marker: the click's entry among the untold refusals (KEYS 13, their
--       reasons KEYS 14), queued when this click is refused (until its decider tells it),
--       taken off when it counts; 19 when another process may tell it (ms).
-- Returns {status, reason, job id, record as a JSON object}; status is
-- recorded|progress|held|refused, or replayed when the click entry of KEYS[12] was decided
-- before by another call (reason: the refusal it got then, '' if it counted; third, the
-- status it got then, '' when not known); the same call sent again after its reply was
-- lost gets the first answer.
--
-- Several records of one run at once (a batch card's items): ARGV 14 says how many more
-- follow the first, their keys are KEYS 12 on (no click marker then), and each adds five
-- ARGV after 14: record id, decision type, decision json, vote json, args digest. The
-- reply is then one result per record, in order; {'damaged', error, ''} for a record
-- that cannot be read back. The key after the records marks this call: sent again after
-- its reply was lost, it gets the first answer (with the records as they are now).

-- The decision on the record of KEYS[1], as ARGV says; ``seen``: the click marker;
-- ``trust``: the trust grant that made it ('' for a person's click); ``granting``: the
-- caller stores a grant for it next, so the run resumes once that is done (granted.lua).
local function decide(seen, trust, granting)
  local key = KEYS[1]
  local rid, user, dtype = ARGV[1], ARGV[2], ARGV[3]
  local now = ARGV[7]
  -- Whatever the outcome, a click entry is decided once: its replay finds the marker,
  -- '<reason> <token> <status> <job id>' (a marker of before tokens: the reason alone).
  local function mark(result)
    if seen then
      local kept = table.concat({result[2], ARGV[13], result[1], result[3]}, ' ')
      redis.call('SET', seen, kept, 'PX', ARGV[10])
      -- A refusal is told by its decider, or, should it die first, by whoever claims it.
      local untold = ARGV[18] or ''
      if untold ~= '' and result[1] == 'refused' then
        redis.call('ZADD', KEYS[13], ARGV[19], untold)
        redis.call('HSET', KEYS[14], untold, result[2])
      elseif untold ~= '' and redis.call('HDEL', KEYS[14], untold) == 1 then
        redis.call('ZREM', KEYS[13], untold)  -- counted after all (groups looked up again)
      end
    end
  end

  -- The record travels as one JSON string: the client reads one reply instead of the
  -- flat HGETALL list's fifty, which was most of a click's cost on the bot's side.
  local function with_json_record(result)
    if result[1] ~= 'replayed' then mark(result) end
    result[#result + 1] = record_json(key)
    return result
  end
  local exists = redis.call('EXISTS', key) == 1
  local was = seen and redis.call('GET', seen)
  if was then
    local reason, token, status, job = string.match(was, '^(%S*) (%S+) (%S+) (%S*)$')
    local first = {'replayed', reason or was, status or ''}
    if token == ARGV[13] then first = {status, reason, job} end
    if not exists then return first end
    first[#first + 1] = record_json(key)
    return first
  end
  if not exists then
    mark({'refused', 'unknown', ''})
    return {'refused', 'unknown', ''}
  end
  local function refuse(reason) return with_json_record({'refused', reason, ''}) end
  if field(key, 'id') ~= rid then return refuse('unknown') end
  -- A grant revoked, or ended, after the bot found it covering this card decides nothing.
  if trust ~= '' and (redis.call('ZSCORE', KEYS[#KEYS], trust)
      or tonumber(now) >= tonumber(ARGV[17])) then
    return refuse('trust_ended')
  end

  local policy = json_field(key, 'policy')
  -- A decision on a request whose interrupt cannot be read back would never resume anything.
  local interrupt = json_field(key, 'interrupt')
  if type(interrupt.id) ~= 'string' or type(interrupt.name) ~= 'string' then
    error('corrupt record ' .. key .. ': field interrupt has no id or name')
  end
  local function member(list)
    for _, value in ipairs(list) do if value == user then return true end end
    return false
  end
  -- An escalation card is a second message of the interrupt; a click from it is from its
  -- channel. A modal submission says the message it was opened from ('' when it does not:
  -- then a step open to a channel's members does not count, as for Home).
  local esc_channel, esc_ts = field(key, 'escalation_channel'), field(key, 'escalation_ts')
  local from_escalation = ARGV[8] ~= '' and esc_ts ~= '' and ARGV[8] == esc_channel
    and ARGV[9] == esc_ts
  -- The earlier steps' escalation cards are copies too.
  local earlier = field(key, 'escalation_cards')
  if ARGV[8] ~= '' and not from_escalation and earlier ~= '' then
    for _, card in ipairs(json_field(key, 'escalation_cards')) do
      if card[1] == ARGV[8] and card[2] == ARGV[9] then from_escalation = true end
    end
  end
  -- A request open to its channel's members takes a click on its own card only (the later
  -- wrong_message check holds it to that card): seeing the card is what shows the clicker
  -- is in the channel. Home and a form opened from Home say no channel.
  local on_own_card = ARGV[8] ~= '' and not from_escalation
  local allowed = (policy.open_to_channel and on_own_card) or member(policy.allowed_users)
    or member(policy.group_members) or member(member_delegates(policy))
  -- A step open to its channel's members takes clicks on a card in that channel only.
  for _, rung in ipairs(reached_rungs(key, policy)) do
    allowed = allowed or member(rung.users)
      or (rung.open_to_channel and from_escalation and ARGV[8] == rung.channel)
  end
  if not allowed then return refuse('not_allowed') end
  -- A delegate and the person they stand in for are one voice: never two votes of a
  -- quorum, and never the requester's own approval.
  if one_voice(policy, user, field(key, 'requested_by')) and not policy.allow_self_approval then
    return refuse('self_approval')
  end
  if field(key, 'state') ~= 'pending' then return refuse('already_decided') end
  if field(key, 'held_until') ~= '' then return refuse('held') end
  local expires = field(key, 'expires_at')
  if expires ~= '' and tonumber(now) >= tonumber(expires) then return refuse('expired') end
  -- A click can land in the instant between the post and its recording (no ts stored yet):
  -- the channel must still match.
  local posted_ts = field(key, 'message_ts')
  if ARGV[8] ~= '' and not from_escalation
    and (ARGV[8] ~= field(key, 'channel') or (posted_ts ~= '' and ARGV[9] ~= posted_ts)) then
    return refuse('wrong_message')
  end
  if ARGV[6] ~= field(key, 'args_digest') then return refuse('wrong_digest') end
  local offered = false
  for _, offer in ipairs(policy.decisions) do if offer == dtype then offered = true end end
  if not offered then return refuse('not_offered') end
  -- A quorum approves the call as shown: one person's edit or reply would end it alone
  -- (records stored before cards stopped offering them to a quorum).
  if tonumber(policy.min_approvals) > 1 and not interrupt.question
    and (dtype == 'edit' or dtype == 'respond') then
    return refuse('not_offered')
  end

  local voters = json_field(key, 'voters')
  if dtype == 'approve' then
    for _, voter in ipairs(voters) do
      if one_voice(policy, voter, user) then return refuse('already_voted') end
    end
  end
  -- The click came from the card before its ts was recorded (its poster may have died
  -- there): the click says where the card is, and it is posted, so no repost follows. A
  -- click on an escalation card says where that card is, not the request's own.
  if on_own_card and posted_ts == '' and ARGV[9] ~= '' then
    redis.call('HSET', key, 'message_ts', ARGV[9])
    if field(key, 'thread_ts') == '' then redis.call('HSET', key, 'thread_ts', ARGV[9]) end
    redis.call('ZREM', KEYS[6], rid)
  end
  local votes = field(key, 'votes')
  if votes == '[]' then votes = '[' .. ARGV[5] .. ']'
  else votes = string.sub(votes, 1, -2) .. ',' .. ARGV[5] .. ']' end
  redis.call('HSET', key, 'votes', votes)

  if dtype == 'approve' then
    voters[#voters + 1] = user
    redis.call('HSET', key, 'voters', cjson.encode(voters))
    if #voters < tonumber(policy.min_approvals) then
      audit(KEYS[10], ARGV[12], 'vote', rid, user, now, dtype)
      return with_json_record({'progress', '', ''})
    end
  end
  -- With an undo window the decision is held: the due sweep makes it final when the window
  -- ends (expire.lua), unless someone undoes it first (undo.lua).
  -- The grant's end is kept too: a held approval under it becomes final only while the
  -- grant stands (expire.lua).
  if trust ~= '' then redis.call('HSET', key, 'trust_grant', trust, 'trust_until', ARGV[17]) end
  local window = policy.undo_window
  if type(window) == 'number' and window > 0 then
    local untl = string.format('%d', tonumber(now) + math.floor(window * 1000))
    redis.call('HSET', key, 'held_until', untl, 'held_by', user, 'held_at', now,
      'held_decision', ARGV[4])
    -- Its grant is stored when the window ends: the run's resume then waits for it.
    if granting then redis.call('HSET', key, 'held_granting', '1') end
    redis.call('ZADD', KEYS[4], untl, rid)
    audit(KEYS[10], ARGV[12], 'held', rid, user, now, ARGV[4])
    return with_json_record({'held', '', ''})
  end
  local job = finalize(rid, FINALS[dtype], user, now, ARGV[4], tonumber(ARGV[10]), true, ARGV[11],
    granting)
  audit(KEYS[10], ARGV[12], FINALS[dtype], rid, user, now, ARGV[4])
  return with_json_record({'recorded', '', job})
end

-- Whether error `message` says the record's data is not what decide reads: a field that
-- is not JSON, a key of another type, or a policy without what it needs.
local function damaged(message)
  for _, sign in ipairs({'corrupt record', 'WRONGTYPE', 'attempt to ', 'bad argument'}) do
    if string.find(message, sign, 1, true) then return true end
  end
  return false
end

local more = tonumber(ARGV[14] or '')
if not more then
  local trust = ARGV[15] or ''
  local seen = KEYS[12]
  if trust ~= '' and #KEYS == 12 then seen = nil end  -- KEYS[12]: the revoked grants
  return decide(seen, trust, ARGV[16] == 'hold')
end
local keys = {KEYS[1]}
for j = 1, more do keys[j + 1] = KEYS[11 + j] end
local marker = KEYS[12 + more]
local was = redis.call('GET', marker)
if was then
  local results = {}
  for j, first in ipairs(cjson.decode(was)) do
    local now = first[1] ~= 'damaged' and record_json(keys[j]) or ''
    if now ~= '' then first[4] = now end
    results[j] = first
  end
  return results
end
local results = {}
for j, key in ipairs(keys) do
  if j > 1 then
    local at = 14 + (j - 2) * 5
    KEYS[1] = key
    ARGV[1], ARGV[3], ARGV[4] = ARGV[at + 1], ARGV[at + 2], ARGV[at + 3]
    ARGV[5], ARGV[6] = ARGV[at + 4], ARGV[at + 5]
  end
  -- A record that cannot be read back is refused on its own; the others go on. Any other
  -- error (Redis out of memory, a replica) fails the whole call, as for one decision.
  local ok, result = pcall(decide, nil, '', false)
  if ok then
    results[j] = result
  elseif damaged(tostring(result)) then
    results[j] = {'damaged', tostring(result), ''}
  else
    error(result)
  end
end
local answers = {}
for j, result in ipairs(results) do answers[j] = {result[1], result[2], result[3]} end
redis.call('SET', marker, cjson.encode(answers), 'PX', ARGV[10])
return results
