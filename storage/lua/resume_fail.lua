-- Resume job ARGV[1] failed: release the lease and count the failure; at ARGV[4] failures
-- move the job to the dead-letter stream and acknowledge it, so it is not retried again.
-- KEYS: 1 run lease, 2 run attempts hash, 3 resume stream, 4 dead-letter stream.
-- ARGV: 1 job id, 2 consumer, 3 group, 4 max attempts, 5 attempts ttl ms, 6 error,
-- 7 now ms, 8 run id, 9 thread id, 10 record ids, 11 dead-letter maxlen, 12 this call's
-- token (the same call sent again after its reply was lost is answered as it was).
-- Returns {'retry' | 'dead', attempts}.
local mark = ARGV[1] .. ':failed'
local last = redis.call('HGET', KEYS[2], mark)
if last then
  local token, status, n = string.match(last, '^(%S+) (%a+) (%d+)$')
  if token == ARGV[12] then return {status, tonumber(n)} end
end
if redis.call('GET', KEYS[1]) == ARGV[1] .. ' ' .. ARGV[2] then redis.call('DEL', KEYS[1]) end
local attempts = redis.call('HINCRBY', KEYS[2], ARGV[1], 1)
redis.call('PEXPIRE', KEYS[2], ARGV[5])
if attempts < tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[2], mark, ARGV[12] .. ' retry ' .. attempts)
  return {'retry', attempts}
end
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[11], '*',
  'job_id', ARGV[1], 'run_id', ARGV[8], 'thread_id', ARGV[9], 'record_ids', ARGV[10],
  'error', ARGV[6], 'attempts', attempts, 'at', ARGV[7])
redis.call('XACK', KEYS[3], ARGV[3], ARGV[1])
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('HSET', KEYS[2], mark, ARGV[12] .. ' dead ' .. attempts)
return {'dead', attempts}
