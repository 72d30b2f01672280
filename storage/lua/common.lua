-- Shared by the interrupt transition scripts (prepended to each by storage/client.py).
-- KEYS of a transition: 1 record, 2 run pending set, 3 run round counter, 4 due,
-- 5 reminders, 6 outbox, 7 pending-by-user, 8 pending-by-channel, 9 resume stream,
-- 10 audit stream, 11 run decided set (records decided since the last resume job).

local function field(key, name)
  local value = redis.call('HGET', key, name)
  if value == false then return '' end
  return value
end

-- A JSON field of the record; a clear per-record error when it is not JSON.
local function json_field(key, name)
  local ok, value = pcall(cjson.decode, field(key, name))
  if not ok or type(value) ~= 'table' then
    error('corrupt record ' .. key .. ': field ' .. name .. ' is not JSON')
  end
  return value
end

-- The delegates standing in for `members` (a group's, as stored): a member who has left
-- the group takes their delegate's right to decide with them.
local function delegates_of(policy, members)
  local listed, out = {}, {}
  for _, user in ipairs(members or {}) do listed[user] = true end
  for _, pair in ipairs(policy.stand_ins or {}) do
    if listed[pair[2]] then out[#out + 1] = pair[1] end
  end
  return out
end

-- The escalation steps the record `key` has reached: the first escalation (the policy's
-- escalate_* fields), then its ladder's steps, up to the step stored in `escalated`. Each
-- with the channel its card is posted in (the record's, when the step names none), and
-- the people it names: its users, its groups' members as stored and their delegates.
local function reached_rungs(key, policy)
  local step = tonumber(field(key, 'escalated')) or 0
  local function where(channel)
    if type(channel) == 'string' then return channel end
    return field(key, 'channel')
  end
  local function named(users, members)
    local out = {}
    for _, list in ipairs({users or {}, members or {}, delegates_of(policy, members)}) do
      for _, user in ipairs(list) do out[#out + 1] = user end
    end
    return out
  end
  local rungs = {}
  if step >= 1 then
    rungs[1] = {users = named(policy.escalate_to_users, policy.escalate_group_members),
      channel = where(policy.escalate_to_channel),
      open_to_channel = policy.escalate_open_to_channel == true}
  end
  local ladder = type(policy.ladder) == 'table' and policy.ladder or {}
  for i = 1, math.min(step - 1, #ladder) do
    rungs[#rungs + 1] = {users = named(ladder[i].users, ladder[i].group_members),
      channel = where(ladder[i].channel), open_to_channel = ladder[i].open_to_channel == true}
  end
  return rungs
end

local function member_delegates(policy)
  return delegates_of(policy, policy.group_members)
end

-- Index members of the users who may decide: "user \0 created_ms \0 record_id". When
-- `adding`, a requester who may not approve their own request is left out, so it never
-- waits for them; removals name everyone (records indexed before this listed them too).
local function user_members(key, rid, adding)
  local policy = json_field(key, 'policy')
  local created = field(key, 'created_at')
  local seen, out = {}, {}
  if adding and not policy.allow_self_approval then seen[field(key, 'requested_by')] = true end
  local function add(list)
    for _, user in ipairs(list) do
      if not seen[user] then
        seen[user] = true
        out[#out + 1] = user .. '\0' .. created .. '\0' .. rid
      end
    end
  end
  add(policy.allowed_users)
  add(policy.group_members)
  add(member_delegates(policy))
  for _, rung in ipairs(reached_rungs(key, policy)) do add(rung.users) end
  return out
end

-- ZADD (score 0) or ZREM many members in one call per 500, not one call per member.
local function zset_many(command, zset, members)
  for i = 1, #members, 500 do
    local args = {}
    for j = i, math.min(i + 499, #members) do
      if command == 'ZADD' then args[#args + 1] = 0 end
      args[#args + 1] = members[j]
    end
    redis.call(command, zset, unpack(args))
  end
end

local function channel_member(key, rid, channel)
  return channel .. '\0' .. field(key, 'created_at') .. '\0' .. rid
end

-- The pending records of external requests by client ("client \0 record_id"), counted
-- against each client's cap: the pending-by-channel key's name (KEYS[8] of a transition)
-- with 'client' for 'channel', so it is in that key's slot.
local function by_client(by_channel)
  return string.sub(by_channel, 1, -8) .. 'client'
end

-- The pending records open to everyone in their channel, as in the pending-by-channel
-- index: App Home finds those of a user's channels without reading any other record. The
-- key's name is that index's (KEYS[8] of a transition) with 'open' for 'channel': its slot.
local function by_open_channel(by_channel)
  return string.sub(by_channel, 1, -8) .. 'open'
end

-- The channels whose members may decide record `key` now, from a card in them: its own
-- `channel` when the request is open to it, and that of each escalation step reached
-- that is open to its channel.
local function open_channels(key, channel)
  local policy = json_field(key, 'policy')
  local out = {}
  if policy.open_to_channel then out[#out + 1] = channel end
  for _, rung in ipairs(reached_rungs(key, policy)) do
    if rung.open_to_channel and rung.channel ~= '' then out[#out + 1] = rung.channel end
  end
  return out
end

-- Index record `key` in the pending-by-channel `index` at `channel`, and in the open one
-- at each channel whose members may decide it.
local function index_channel(index, key, rid, channel)
  redis.call('ZADD', index, 0, channel_member(key, rid, channel))
  for _, open in ipairs(open_channels(key, channel)) do
    redis.call('ZADD', by_open_channel(index), 0, channel_member(key, rid, open))
  end
end

-- Take record `key` out of the pending-by-channel `index` at `channel`, and out of the
-- open one wherever it is listed.
local function unindex_channel(index, key, rid, channel)
  local member = channel_member(key, rid, channel)
  redis.call('ZREM', index, member)
  redis.call('ZREM', by_open_channel(index), member)
  for _, open in ipairs(open_channels(key, channel)) do
    redis.call('ZREM', by_open_channel(index), channel_member(key, rid, open))
  end
end

-- An external request's entries also go to `<audit stream>:requests`, which its waiters
-- and webhooks read, so they never wade through every agent's clicks. (The key is derived,
-- not passed: it carries its stream's hash tag, so it lives in the same slot.)
local function audit(stream, maxlen, event, rid, user, now, detail)
  local key = KEYS[1]
  local run_id = field(key, 'run_id')
  local entry = {'event', event, 'record_id', rid, 'run_id', run_id, 'user_id', user,
    'at', now, 'channel', field(key, 'channel'), 'message_ts', field(key, 'message_ts'),
    'detail', detail}
  redis.call('XADD', stream, 'MAXLEN', '~', maxlen, '*', unpack(entry))
  if string.sub(run_id, 1, 4) == 'req_' then
    redis.call('XADD', stream .. ':requests', 'MAXLEN', '~', maxlen, '*', unpack(entry))
  end
end

-- How long a record decided now is kept: `retention` ms, or while its run still has
-- interrupts pending (KEYS[2], kept as long as the longest of them), since the run's resume
-- reads every decision of the round once the last one is made.
local function decided_keep(retention)
  return math.max(retention, redis.call('PTTL', KEYS[2]))
end

-- Append the resume job of the run of KEYS[1] for its round's decided records.
local function resume_job(decided, now, retention, stream_maxlen)
  table.sort(decided)
  local round = redis.call('INCR', KEYS[3])
  redis.call('PEXPIRE', KEYS[3], retention)
  return redis.call('XADD', KEYS[9], 'MAXLEN', '~', stream_maxlen, '*',
    'run_id', field(KEYS[1], 'run_id'), 'thread_id', field(KEYS[1], 'thread_id'),
    'round', round, 'record_ids', table.concat(decided, ' '), 'at', now)
end

-- The run's records whose "Approve and trust" grant is not stored yet (`granted.lua` takes
-- each out once it is): the run's resume job waits for them, so the resumed run's next call
-- of the tool meets the grant. The run decided set's key (KEYS[11]) with 'granting' for
-- 'decided', so it is in that key's slot (``Keys.run_granting``).
local function granting_key()
  return string.sub(KEYS[11], 1, -8) .. 'granting'
end

-- Move a pending record to a final state: drop it from every pending index, keep it (see
-- decided_keep), and when it was the run's last pending interrupt (and `resume` is set)
-- append exactly one resume job, unless a trust grant of the run is still to be stored
-- (`granting`: the caller stores one for this decision next). Returns the job's id or ''.
local function finalize(rid, state, by, now, decision, retention, resume, stream_maxlen, granting)
  local key = KEYS[1]
  zset_many('ZREM', KEYS[7], user_members(key, rid, false))
  if string.sub(rid, 1, 4) == 'req_' then
    redis.call('ZREM', by_client(KEYS[8]), field(key, 'requested_by') .. '\0' .. rid)
  end
  local channel = field(key, 'channel')
  if channel ~= '' then unindex_channel(KEYS[8], key, rid, channel) end
  redis.call('ZREM', KEYS[4], rid)
  redis.call('ZREM', KEYS[5], rid)
  redis.call('ZREM', KEYS[6], rid)
  redis.call('HSET', key, 'state', state, 'decided_by', by, 'decided_at', now,
    'decision', decision, 'next_reminder_at', '')
  redis.call('SREM', KEYS[2], rid)
  local keep = decided_keep(retention)
  redis.call('PEXPIRE', key, keep)
  if not resume then return '' end
  redis.call('SADD', KEYS[11], rid)
  redis.call('PEXPIRE', KEYS[11], keep)
  local waits = granting_key()
  if granting then
    redis.call('SADD', waits, rid)
    redis.call('PEXPIRE', waits, keep)
  end
  if redis.call('SCARD', KEYS[2]) > 0 or redis.call('SCARD', waits) > 0 then return '' end
  local decided = redis.call('SMEMBERS', KEYS[11])
  redis.call('DEL', KEYS[11])
  return resume_job(decided, now, retention, stream_maxlen)
end

-- The final state each kind of decision puts a record in.
local FINALS = {approve = 'approved', reject = 'denied', edit = 'edited', respond = 'responded'}

-- Whether `user` is among the approvers of the record `key` under `policy` (an
-- escalation's approvers count once it is escalated).
-- Whether users a and b are one voice: the same person, or someone away (``/signoff
-- away``) and the delegate standing in for them.
local function one_voice(policy, a, b)
  if a == b then return true end
  for _, pair in ipairs(policy.stand_ins or {}) do
    if (pair[1] == a and pair[2] == b) or (pair[1] == b and pair[2] == a) then return true end
  end
  return false
end

-- A request or step open to its channel's members counts only for a click on one of its
-- own cards (`on_card`: the record's; `escalation_channel`: the channel of the escalation
-- card clicked, or nil): seeing the card is what shows the clicker is in its channel.
local function is_approver(key, policy, user, on_card, escalation_channel)
  local function member(list)
    for _, value in ipairs(list) do if value == user then return true end end
    return false
  end
  if (policy.open_to_channel and on_card) or member(policy.allowed_users)
    or member(policy.group_members) or member(member_delegates(policy)) then
    return true
  end
  for _, rung in ipairs(reached_rungs(key, policy)) do
    if member(rung.users) or (rung.open_to_channel and escalation_channel == rung.channel) then
      return true
    end
  end
  return false
end

-- The hash of the record `key` as one JSON object ('' when it is gone).
local function record_json(key)
  local flat, record = redis.call('HGETALL', key), {}
  if #flat == 0 then return '' end
  for i = 1, #flat, 2 do record[flat[i]] = flat[i + 1] end
  return cjson.encode(record)
end

local function with_record(result)
  local flat = redis.call('HGETALL', KEYS[1])
  for _, value in ipairs(flat) do result[#result + 1] = value end
  return result
end
