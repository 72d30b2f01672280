-- Mark an approved interrupt (or edited, or answered with a reply) as superseded: what it
-- would act on changed before it ran, so it did not run, and a new interrupt (ARGV[2])
-- asks again. KEYS as in common.lua.
-- ARGV: 1 record id, 2 the new interrupt's record id, 3 now, 4 audit maxlen.
-- Returns {status, record as a JSON object}; status marked (now, or by ARGV[2] before)|skip.
local key, rid = KEYS[1], ARGV[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= rid then return {'skip', ''} end
local state = field(key, 'state')
-- Marked by this very request before: its retry (the same idempotency key) goes on.
if field(key, 'superseded_by') == ARGV[2] then return {'marked', record_json(key)} end
if (state ~= 'approved' and state ~= 'edited' and state ~= 'responded')
    or field(key, 'superseded_by') ~= '' then
  return {'skip', record_json(key)}
end
redis.call('HSET', key, 'superseded_by', ARGV[2])
audit(KEYS[10], ARGV[4], 'changed', rid, '', ARGV[3], ARGV[2])
return {'marked', record_json(key)}
