-- Take a job's outcome report: the run's end mark and the outcome in one step, so a report
-- is kept whole or not at all. One taken after another report was forgotten (the rest of
-- it failed) withdraws that one's audit entry, if it has one and it was another report.
-- KEYS: 1 the run's end mark, 2 its job hash, 3 its audit marks, 4 the audit stream,
-- 5 the request events (when given).
-- ARGV: 1 the mark ("<report digest> <token of this call>"), 2 "<ms> <outcome JSON>",
-- 3 how long (ms) both are kept, 4 the trail's cap, 5.. the withdrawal entry's field,
-- value pairs (its detail: the forgotten report's, put here).
-- Returns the mark that stands: ARGV[1] when this call's report was taken.
local stored = redis.call('GET', KEYS[1])
if stored then return stored end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[3])
local forgotten = redis.call('HGET', KEYS[2], 'forgotten')
if forgotten then
  redis.call('HDEL', KEYS[2], 'forgotten')
  local digest, report = string.match(forgotten, '^(%S+) (.*)$')
  local mine = string.match(ARGV[1], '^%S+')
  if digest ~= mine and redis.call('HDEL', KEYS[3], 'outcome ' .. digest) == 1 then
    local entry = {}
    for i = 5, #ARGV, 2 do
      entry[#entry + 1] = ARGV[i]
      entry[#entry + 1] = ARGV[i] == 'detail' and report or ARGV[i + 1]
    end
    redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[4], '*', unpack(entry))
    if KEYS[5] then redis.call('XADD', KEYS[5], 'MAXLEN', '~', ARGV[4], '*', unpack(entry)) end
  end
end
redis.call('HSET', KEYS[2], 'outcome', ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[3])
return ARGV[1]
