-- May this consumer apply resume job ARGV[1] to the run's session version?
-- KEYS: 1 run lease, 2 run applied-versions hash, then (ARGV[5] 'session') the thread's
-- session hash, then the job's interrupt records.
-- ARGV: 1 job id, 2 version ('' = the session's stored version), 3 consumer, 4 lease ms,
-- 5 'session' when KEYS[3] is the session (on Redis Cluster it is in another slot).
-- Returns {'go' | 'done' (already applied: just ack) | 'busy', version}; on 'go' then the
-- session's snapshot ('' when not read) and each record as one JSON object ('' when it is
-- gone or not a hash), so a worker reads all its resume needs in this round trip.
local with_session = ARGV[5] == 'session'
local version = ARGV[2]
if version == '' then version = redis.call('HGET', KEYS[3], 'version') or '0' end
if redis.call('HEXISTS', KEYS[2], 'job:' .. ARGV[1]) == 1
  or redis.call('HEXISTS', KEYS[2], 'version:' .. version) == 1 then
  return {'done', version}
end
local holder = ARGV[1] .. ' ' .. ARGV[3]
if not redis.call('SET', KEYS[1], holder, 'NX', 'PX', ARGV[4]) then
  if redis.call('GET', KEYS[1]) ~= holder then return {'busy', version} end
  redis.call('PEXPIRE', KEYS[1], ARGV[4])
end
local result = {'go', version, ''}
local first_record = 3
if with_session then
  result[3] = redis.call('HGET', KEYS[3], 'snapshot') or ''
  first_record = 4
end
for i = first_record, #KEYS do
  local flat, record = redis.pcall('HGETALL', KEYS[i]), {}
  if flat.err or #flat == 0 then
    result[#result + 1] = ''
  else
    for j = 1, #flat, 2 do record[flat[j]] = flat[j + 1] end
    result[#result + 1] = cjson.encode(record)
  end
end
return result
