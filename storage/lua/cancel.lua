-- Cancel every pending interrupt of a run that is being stopped, in one step: no decision
-- lands between two of them, and no resume job follows. Decisions already recorded on the
-- run's other cards, waiting for these, leave the round with them: they never run.
-- KEYS as in common.lua, with KEYS[1] the first pending record and KEYS[12..] the others.
-- ARGV: 1 by (user id or ''), 2 now, 3 decision json (a rejection carrying the reason),
-- 4 retention ms, 5 audit maxlen, 6.. the records' ids, in the order of their keys.
-- Returns {'moved'} when the run's pending records are not those given (read them again),
-- else {'cancelled', n, damaged id...}: how many were cancelled, and the records skipped
-- because they could not be read (the others are cancelled all the same).
local records, ids = {KEYS[1]}, {}
for i = 12, #KEYS do records[#records + 1] = KEYS[i] end
for i = 6, #ARGV do ids[#ids + 1] = ARGV[i] end
if redis.call('SCARD', KEYS[2]) ~= #ids then return {'moved'} end
for _, rid in ipairs(ids) do
  if redis.call('SISMEMBER', KEYS[2], rid) == 0 then return {'moved'} end
end
local cancelled, damaged = 0, {}
for i, key in ipairs(records) do
  KEYS[1] = key  -- the shared functions work on the record in KEYS[1]
  local readable, policy = pcall(cjson.decode, field(key, 'policy'))
  if not readable or type(policy) ~= 'table' then
    damaged[#damaged + 1] = ids[i]
  else
    -- A decision held in its undo window never takes effect now (the audit trail keeps it).
    redis.call('HDEL', key, 'held_until', 'held_by', 'held_at', 'held_decision')
    finalize(ids[i], 'cancelled', ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]), false, 0)
    audit(KEYS[10], ARGV[5], 'cancelled', ids[i], ARGV[1], ARGV[2], ARGV[3])
    cancelled = cancelled + 1
  end
end
redis.call('DEL', KEYS[11])
return {'cancelled', cancelled, unpack(damaged)}
