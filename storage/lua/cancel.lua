-- Cancel every pending interrupt of a run that is being stopped, in one step: no decision
-- lands between two of them, and no resume job follows. Decisions already recorded on the
-- run's other cards, waiting for these, leave the round with them: they never run, and
-- an agent's run marks them so (a job's request reports its decided items itself).
-- KEYS as in common.lua, with KEYS[1] the first pending record, then from KEYS[12] the
-- other pending records and the decided ones waiting in the round.
-- ARGV: 1 by (user id or ''), 2 now, 3 decision json (a rejection carrying the reason),
-- 4 retention ms, 5 audit maxlen, 6 this call's token: the same call sent again (its reply
-- was lost) gets the first answer, 7 the request whose loss from Redis ends the run ('' when
-- none): kept on each record as 'run_lost' (on a decided one of an agent's run only: it
-- never runs), so its card says why, 8 how many records are pending, 9.. the records'
-- ids, pending then decided, in the order of their keys.
-- Returns {'moved'} when the run's records are not those given (read them again), else
-- {'cancelled', n, damaged id..., 'gone', gone id...}: how many were cancelled, the
-- records skipped because they could not be read, and those Redis no longer has (lost
-- while pending); the others are cancelled all the same.
local pending = tonumber(ARGV[8])
local records, ids = {KEYS[1]}, {}
for i = 12, #KEYS do records[#records + 1] = KEYS[i] end
for i = 9, #ARGV do ids[#ids + 1] = ARGV[i] end
local function skipped(damaged, gone)
  local reply = {'cancelled', 0, unpack(damaged)}
  reply[#reply + 1] = 'gone'
  for _, rid in ipairs(gone) do reply[#reply + 1] = rid end
  return reply
end
if field(KEYS[1], 'cancelled_as') == ARGV[6] then
  local again, damaged, gone = 0, {}, {}
  for i = 1, pending do
    if field(records[i], 'cancelled_as') == ARGV[6] then
      again = again + 1
    elseif redis.call('EXISTS', records[i]) == 0 then
      gone[#gone + 1] = ids[i]
    else
      damaged[#damaged + 1] = ids[i]
    end
  end
  local reply = skipped(damaged, gone)
  reply[2] = again
  return reply
end
local function same(set, from, to)
  if redis.call('SCARD', set) ~= to - from + 1 then return false end
  for i = from, to do
    if redis.call('SISMEMBER', set, ids[i]) == 0 then return false end
  end
  return true
end
if not (same(KEYS[2], 1, pending) and same(KEYS[11], pending + 1, #ids)) then
  return {'moved'}
end
local cancelled, damaged, gone = 0, {}, {}
for i = 1, pending do
  KEYS[1] = records[i]  -- the shared functions work on the record in KEYS[1]
  local key = records[i]
  local readable, policy = pcall(cjson.decode, field(key, 'policy'))
  if redis.call('EXISTS', key) == 0 then
    gone[#gone + 1] = ids[i]
  elseif not readable or type(policy) ~= 'table' then
    damaged[#damaged + 1] = ids[i]
  else
    -- A decision held in its undo window never takes effect now (the audit trail keeps it).
    redis.call('HDEL', key, 'held_until', 'held_by', 'held_at', 'held_decision')
    finalize(ids[i], 'cancelled', ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), false, 0)
    redis.call('HSET', key, 'cancelled_as', ARGV[6])
    if ARGV[7] ~= '' then redis.call('HSET', key, 'run_lost', ARGV[7]) end
    audit(KEYS[10], ARGV[5], 'cancelled', ids[i], ARGV[1], ARGV[2], ARGV[3])
    cancelled = cancelled + 1
  end
end
for i = pending + 1, #ids do
  local key = records[i]
  if redis.call('EXISTS', key) == 1 and string.sub(field(key, 'run_id'), 1, 4) ~= 'req_' then
    if ARGV[1] ~= '' then redis.call('HSET', key, 'run_withdrawn_by', ARGV[1]) end
    if ARGV[7] ~= '' then redis.call('HSET', key, 'run_lost', ARGV[7]) end
  end
end
redis.call('DEL', KEYS[11])
local reply = skipped(damaged, gone)
reply[2] = cancelled
return reply
