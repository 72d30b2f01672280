-- Mark an approved interrupt (or edited, or answered with a reply) as superseded: what it
-- would act on changed before it ran, so it did not run, and a new interrupt (ARGV[2])
-- asks again. A mark left by a request that was never made (ARGV[5], found absent by the
-- caller: its undo failed) is taken over once it is ARGV[6] ms old. KEYS as in common.lua.
-- ARGV: 1 record id, 2 the new interrupt's record id, 3 now, 4 audit maxlen, 5 the mark
-- this request may take over ('' for none), 6 the age (ms) from which it may. KEYS[12]:
-- the run's job hash: an approval whose command was started is not asked again.
-- Returns {status, record as a JSON object}; status marked (now, or by ARGV[2] before),
-- started (its command was started: not marked) or skip.
local key, rid = KEYS[1], ARGV[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'skip', ''} end
local state, by = field(key, 'state'), field(key, 'superseded_by')
-- Marked by this very request before: its retry (the same idempotency key) goes on.
if by == ARGV[2] then return {'marked', record_json(key)} end
if redis.call('HEXISTS', KEYS[12], 'started') == 1 then return {'started', record_json(key)} end
if state ~= 'approved' and state ~= 'edited' and state ~= 'responded' then
  return {'skip', record_json(key)}
end
if by ~= '' then
  -- A mark from before its time was kept counts as old.
  local at = tonumber(field(key, 'superseded_at')) or 0
  if by ~= ARGV[5] or tonumber(ARGV[3]) - at < tonumber(ARGV[6]) then
    return {'skip', record_json(key)}
  end
  audit(KEYS[10], ARGV[4], 'ask_again_refused', rid, '', ARGV[3], by)
end
redis.call('HSET', key, 'superseded_by', ARGV[2], 'superseded_at', ARGV[3])
audit(KEYS[10], ARGV[4], 'changed', rid, '', ARGV[3], ARGV[2])
return {'marked', record_json(key)}
