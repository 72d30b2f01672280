-- Store a run's new interrupt records, index them and put them in the outbox, atomically.
-- The outbox entry is due only after post_lease ms: the creator posts first, and the
-- scheduler reposts only when that failed (no double post during a slow first attempt).
-- KEYS: 1 run pending, 2 due, 3 reminders, 4 outbox, 5 by-user, 6 by-channel, 7 audit,
--       8 group checks, 9 the run's last creation, 10 the run's place (its Slack thread
--       and its batch cards' items; an agent's run: its agent and thread; a job's request:
--       when it was asked), 11 the run's job hash, 12 its end mark and 13 its audited
--       marks (a job's request starts with none of them), 14.. one record key per record.
-- ARGV: now, ttl_ms, audit_maxlen, post_lease ms, group check interval ms, this call's
--       token (kept a minute in KEYS[9]: the same call sent again after its reply was
--       lost is answered 'created'), the client of an external request ('' for an agent's
--       run) and how many pending records of its requests this shard may hold, then per
--       record: field count, name, value, ...
-- Returns {'created'}, {'exists', record_id} or {'full', pending} (nothing written): the
-- client's requests would hold more pending records than it may.
local now, ttl, audit_maxlen = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local post_after = tonumber(now) + tonumber(ARGV[4])
local check_after = tonumber(now) + tonumber(ARGV[5])
local client, client_index = ARGV[7], by_client(KEYS[6])
local records, pos = {}, 9
for i = 14, #KEYS do
  local count = tonumber(ARGV[pos])
  local fields = {}
  for j = pos + 1, pos + count * 2 do fields[#fields + 1] = ARGV[j] end
  pos = pos + count * 2 + 1
  records[#records + 1] = {key = KEYS[i], fields = fields}
end
for _, rec in ipairs(records) do
  if redis.call('EXISTS', rec.key) == 1 then
    if redis.call('GET', KEYS[9]) == ARGV[6] then return {'created'} end
    return {'exists', redis.call('HGET', rec.key, 'id')}
  end
end
if client ~= '' then
  local pending = redis.call('ZLEXCOUNT', client_index, '[' .. client .. '\0',
    '(' .. client .. '\1')
  if pending + #records > tonumber(ARGV[8]) then return {'full', tostring(pending)} end
end
local longest = 0
for _, rec in ipairs(records) do
  local key = rec.key
  redis.call('HSET', key, unpack(rec.fields))
  local rid = field(key, 'id')
  local expires = field(key, 'expires_at')
  local keep = ttl
  if expires ~= '' then
    keep = tonumber(expires) - tonumber(now) + ttl
    redis.call('ZADD', KEYS[2], expires, rid)
  end
  redis.call('PEXPIRE', key, keep)
  if keep > longest then longest = keep end
  local reminder = field(key, 'next_reminder_at')
  if reminder ~= '' then redis.call('ZADD', KEYS[3], reminder, rid) end
  redis.call('ZADD', KEYS[4], post_after, rid)
  if client ~= '' then redis.call('ZADD', client_index, 0, client .. '\0' .. rid) end
  zset_many('ZADD', KEYS[5], user_members(key, rid, true))
  local policy = json_field(key, 'policy')
  local grouped = #policy.allowed_groups > 0 or #(policy.escalate_to_groups or {}) > 0
  for _, rung in ipairs(type(policy.ladder) == 'table' and policy.ladder or {}) do
    grouped = grouped or #(rung.groups or {}) > 0
  end
  if grouped then redis.call('ZADD', KEYS[8], check_after, rid) end
  local channel = field(key, 'channel')
  if channel ~= '' then index_channel(KEYS[6], key, rid, channel) end
  redis.call('SADD', KEYS[1], rid)
  redis.call('XADD', KEYS[7], 'MAXLEN', '~', audit_maxlen, '*',
    'event', 'created', 'record_id', rid, 'run_id', field(key, 'run_id'),
    'user_id', field(key, 'requested_by'), 'at', now, 'channel', channel,
    'message_ts', '', 'detail', '')
end
if redis.call('PTTL', KEYS[1]) < longest then redis.call('PEXPIRE', KEYS[1], longest) end
local first = records[1].key
if string.sub(field(first, 'run_id'), 1, 4) ~= 'req_' then
  redis.call('HSET', KEYS[10], 'agent', field(first, 'agent'), 'thread_id',
    field(first, 'thread_id'), 'requested_by', field(first, 'requested_by'), 'asked_in',
    field(first, 'asked_in'))
else
  -- A job's request: when it was asked, so it can still be answered if its record is lost.
  redis.call('HSET', KEYS[10], 'created_at', field(first, 'created_at'))
  -- A new run: the start, outcome and end of an earlier request made under its idempotency
  -- key (whose records are gone), and what of them was audited, are not its own.
  redis.call('DEL', KEYS[11], KEYS[12], KEYS[13])
end
-- A later round talks in the first round's thread: what a card posted then set stays.
redis.call('HSETNX', KEYS[10], 'channel', field(first, 'channel'))
redis.call('HSETNX', KEYS[10], 'thread_ts', field(first, 'thread_ts'))
-- A batch card's items in its order: the card is still drawn whole if its lead is lost.
for _, rec in ipairs(records) do
  local items = field(rec.key, 'batch_items')
  if items ~= '' then redis.call('HSET', KEYS[10], 'batch:' .. field(rec.key, 'id'), items) end
end
if redis.call('PTTL', KEYS[10]) < longest then redis.call('PEXPIRE', KEYS[10], longest) end
redis.call('SET', KEYS[9], ARGV[6], 'PX', 60000)
return {'created'}
