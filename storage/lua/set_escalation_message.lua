-- Keep where an escalated interrupt's escalation card was posted: a second message whose
-- clicks decide it. KEYS: 1 record. ARGV: 1 channel, 2 message ts.
-- Returns 1 when stored, 0 when the record is gone or was never escalated.
if redis.call('EXISTS', KEYS[1]) == 0 or redis.call('HGET', KEYS[1], 'escalated') ~= '1' then
  return 0
end
redis.call('HSET', KEYS[1], 'escalation_channel', ARGV[1], 'escalation_ts', ARGV[2])
return 1
