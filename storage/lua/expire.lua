-- Expire one interrupt whose time is up (KEYS as in common.lua, plus 12: the count of its
-- acknowledged clicks still waiting in the click stream, 13: the run's place, 14: the token
-- of the sweep that found it lost, 15: what a job's request asked), exactly once.
-- ARGV: 1 record id, 2 now, 3 retention ms, 4 resume stream maxlen, 5 audit maxlen,
-- 6 how long waiting clicks may hold the expiry back (ms), 7 the decision of an approval
-- by default (policy.if_nobody_decides 'approve'), 8 how long the sweeper has to post an
-- escalation step's card before the outbox does (ms), 9 this call's token (the same call
-- sent again after its reply was lost is answered as the first time), 10 what the audit
-- entry of a record found gone while pending says, 11 '' for a sweep; for a decision made
-- after the deadline, which makes the expiry itself: how many of the waiting clicks are its
-- own (they do not hold it back), and a record gone or held is left to the sweep.
-- A decision held in its undo window is made final here instead, once the window ends
-- (12: how long its sweeper has to store the grant of an "Approve and trust" it made final
-- before it is handed out again (ms); KEYS 16: the shard's revoked trust grants).
-- Returns {status, job id, record hash...}; status is
-- expired|escalated|released|rereleased|reopened|skip|missing|lost ('rereleased': released
-- again, its grant not stored in time; 'lost' with the run's place
-- hash; a job's request's place then names it 'lost:<record id>', when it was found lost).
local key, rid, now = KEYS[1], ARGV[1], ARGV[2]
local late = (ARGV[11] or '') ~= ''
local own = late and tonumber(ARGV[11]) or 0
if late and (redis.call('EXISTS', key) == 0 or field(key, 'held_until') ~= '') then
  return {'skip', ''}
end
if redis.call('EXISTS', key) == 0 then
  -- Gone while pending (its TTL ran out unswept, the server evicted it, or it was deleted
  -- by hand): out of the time indexes here; the caller takes it off the pending lists.
  -- The call that takes its due entry out reports it 'lost', audited once: whoever else
  -- sweeps finds it 'missing'. (Only a pending record has a due entry.)
  local claimed = redis.call('ZREM', KEYS[4], rid)
  redis.call('ZREM', KEYS[5], rid)
  redis.call('ZREM', KEYS[6], rid)
  if claimed == 0 then
    -- Only the sweep that claimed it, sent again after its reply was lost, hears it again.
    if redis.call('GET', KEYS[14]) ~= ARGV[9] then return {'missing', ''} end
  else
    local run_id = string.match(rid, '^[^/]+')
    local entry = {'event', 'lost', 'record_id', rid, 'run_id', run_id, 'user_id', '',
      'at', now, 'channel', '', 'message_ts', '', 'detail', ARGV[10]}
    redis.call('XADD', KEYS[10], 'MAXLEN', '~', ARGV[5], '*', unpack(entry))
    if string.sub(run_id, 1, 4) == 'req_' then
      redis.call('XADD', KEYS[10] .. ':requests', 'MAXLEN', '~', ARGV[5], '*', unpack(entry))
      -- A job's request is answered 'lost' for as long as what it asked is kept.
      redis.call('HSET', KEYS[13], 'lost:' .. rid, now)
      local keep = math.max(redis.call('PTTL', KEYS[15]), redis.call('PTTL', KEYS[13]), 60000)
      redis.call('PEXPIRE', KEYS[13], keep)
    end
    redis.call('SET', KEYS[14], ARGV[9], 'PX', 60000)
  end
  local lost = {'lost', ''}
  for _, value in ipairs(redis.call('HGETALL', KEYS[13])) do lost[#lost + 1] = value end
  return lost
end
-- What this call did, kept as '<token> <status> <job id>': its card is updated and its
-- requester told by the sweeper that hears of it.
local function swept(status, job)
  redis.call('HSET', key, 'swept_by', ARGV[9] .. ' ' .. status .. ' ' .. job)
  return with_record({status, job})
end
local before = field(key, 'swept_by')
if string.sub(before, 1, #ARGV[9] + 1) == ARGV[9] .. ' ' then
  local status, job = string.match(string.sub(before, #ARGV[9] + 2), '^(%S+) ?(%S*)$')
  return with_record({status, job})
end
if field(key, 'state') ~= 'pending' then
  -- Made final here, its run's resume waiting for the grant its "Approve and trust" makes,
  -- which its sweeper did not store in time (it died, or Redis failed): released again, so
  -- whoever sweeps now stores it and queues the resume (granted.lua drops the due entry).
  if redis.call('SISMEMBER', granting_key(), rid) == 1 then
    if late then return {'skip', ''} end  -- left to the sweep
    redis.call('ZADD', KEYS[4], tonumber(now) + tonumber(ARGV[12]), rid)
    return swept('rereleased', '')
  end
  redis.call('ZREM', KEYS[4], rid)
  return {'skip', ''}
end
-- A decision held in its undo window: final once the window has ended, and the run resumes.
local held = field(key, 'held_until')
if held ~= '' then
  if tonumber(now) < tonumber(held) then
    redis.call('ZADD', KEYS[4], held, rid)
    return {'skip', ''}
  end
  local by, at, decision = field(key, 'held_by'), field(key, 'held_at'), field(key, 'held_decision')
  local dtype = json_field(key, 'held_decision').type
  -- An approval a trust grant made (nobody clicked) takes effect only while the grant
  -- stands: revoked or ended before the window did, it is taken back as by an Undo, and
  -- the request waits for a person again.
  local trust = field(key, 'trust_grant')
  local lapsed = ''
  if trust ~= '' then
    local ends = tonumber(field(key, 'trust_until'))
    if redis.call('ZSCORE', KEYS[16], trust) then lapsed = 'revoked'
    elseif ends and tonumber(now) >= ends then lapsed = 'ended' end
  end
  if lapsed ~= '' then
    redis.call('HDEL', key, 'held_until', 'held_by', 'held_at', 'held_decision', 'held_granting',
      'trust_grant', 'trust_until', 'undone_by')
    redis.call('HSET', key, 'votes', '[]', 'voters', '[]', 'undone_at', now, 'undid', by,
      'undone_type', dtype, 'undone_trust', trust, 'undone_lapsed', lapsed)
    local expires = field(key, 'expires_at')
    if expires ~= '' then redis.call('ZADD', KEYS[4], expires, rid) else redis.call('ZREM', KEYS[4], rid) end
    audit(KEYS[10], ARGV[5], 'trust_lapsed', rid, '', now, trust .. ' ' .. lapsed)
    return swept('reopened', '')
  end
  -- An "Approve and trust": the run resumes once its grant is stored (granted.lua), which
  -- this record's due entry hands out again until it is.
  local granting = field(key, 'held_granting') == '1'
  redis.call('HDEL', key, 'held_until', 'held_by', 'held_at', 'held_decision', 'held_granting')
  local job = finalize(rid, FINALS[dtype], by, at, decision, tonumber(ARGV[3]), true, ARGV[4],
    granting)
  if granting and redis.call('SISMEMBER', granting_key(), rid) == 1 then
    redis.call('ZADD', KEYS[4], tonumber(now) + tonumber(ARGV[12]), rid)
  end
  audit(KEYS[10], ARGV[5], FINALS[dtype], rid, by, now, decision)
  return swept('released', job)
end
local expires = field(key, 'expires_at')
if expires == '' or tonumber(now) < tonumber(expires) then
  if expires ~= '' then redis.call('ZADD', KEYS[4], expires, rid) end
  return {'skip', ''}
end
if tonumber(redis.call('GET', KEYS[12]) or '0') - own > 0 then
  -- A click Slack saw acknowledged waits to be decided, as of when it was made: look again
  -- in a second, once a decider has had its turn; at most ARGV[6] ms if none ever does.
  if redis.call('PTTL', KEYS[12]) == -1 then redis.call('PEXPIRE', KEYS[12], ARGV[6]) end
  redis.call('ZADD', KEYS[4], tonumber(now) + 1000, rid)
  return {'skip', ''}
end
local policy = json_field(key, 'policy')
-- Up the escalation ladder: the first escalation, then each of the ladder's steps.
local step = tonumber(field(key, 'escalated')) or 0
local ladder = type(policy.ladder) == 'table' and policy.ladder or {}
local steps = 0
if policy.on_expiry == 'escalate' then steps = 1 + #ladder end
if step < steps then
  local window = tonumber(policy.escalate_expires_in) or tonumber(policy.expires_in)
  if step >= 1 then window = tonumber(ladder[step].expires_in) or tonumber(policy.expires_in) end
  local later = tonumber(now) + math.floor(window * 1000)
  redis.call('HSET', key, 'escalated', tostring(step + 1), 'expires_at', string.format('%d', later))
  redis.call('HDEL', key, 'escalation_error')  -- Slack's answer to the step before's card
  redis.call('ZADD', KEYS[4], later, rid)
  local ttl = redis.call('PTTL', key)
  if ttl > 0 then
    ttl = ttl + later - tonumber(expires)
    redis.call('PEXPIRE', key, ttl)
    -- The run's pending set (and place) lives as long as its longest-lived record.
    for _, run_key in ipairs({KEYS[2], KEYS[13]}) do
      if redis.call('PTTL', run_key) < ttl then redis.call('PEXPIRE', run_key, ttl) end
    end
  end
  zset_many('ZADD', KEYS[7], user_members(key, rid, true))
  -- Listed in App Home for the members of the step's channel when it is open to them.
  local rungs = reached_rungs(key, policy)
  local reached = rungs[#rungs]
  if reached.open_to_channel and reached.channel ~= '' then
    redis.call('ZADD', by_open_channel(KEYS[8]), 0, channel_member(key, rid, reached.channel))
  end
  -- The step's card: posted by the sweeper now, or by the outbox if the sweeper dies first.
  if reached.channel ~= '' then
    redis.call('ZADD', KEYS[6], 'NX', tonumber(now) + tonumber(ARGV[8]), rid)
  end
  audit(KEYS[10], ARGV[5], 'escalated', rid, '', now, tostring(step + 1))
  return swept('escalated', '')
end
-- Nobody decided in time: the policy's safe default (denied, or for a low-risk action whose
-- policy says so, approved: only when someone could have decided, its card posted, and no
-- one took an approval of it back with Undo).
local undid_approval = field(key, 'undone_type') == 'approve' or field(key, 'undone_type') == 'edit'
local by_default = policy.if_nobody_decides == 'approve'
if by_default and field(key, 'message_ts') == '' then by_default = false end
if by_default and undid_approval then by_default = false end
if by_default then
  local job = finalize(rid, 'approved', '', now, ARGV[7], tonumber(ARGV[3]), true, ARGV[4])
  audit(KEYS[10], ARGV[5], 'approved_by_default', rid, '', now, ARGV[7])
  return swept('expired', job)
end
local job = finalize(rid, 'expired', '', now, '', tonumber(ARGV[3]), true, ARGV[4])
local why = ''
if policy.if_nobody_decides == 'approve' then
  why = 'not approved by default: its card was never posted'
  if undid_approval then why = 'not approved by default: an approval was undone' end
end
audit(KEYS[10], ARGV[5], 'expired', rid, '', now, why)
return swept('expired', job)
