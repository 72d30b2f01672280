-- Keep ARGV[2], what Slack answered a failed post, on record KEYS[1] (id ARGV[1]) while
-- its card is not posted; a record gone or posted meanwhile is left alone. Returns 1 for
-- the card's first failed post, else 0. ARGV[3]: this call's token (the same call sent
-- again after its reply was lost gets the first answer, so the requester is still told).
-- KEYS[2]: the outbox, whose due time for the record is noted as `outbox_waits`: while
-- the entry keeps it, no poster holds it (claim_waiting.lua).
if redis.call('EXISTS', KEYS[1]) == 0 or field(KEYS[1], 'id') ~= ARGV[1] then return 0 end
if field(KEYS[1], 'message_ts') ~= '' then return 0 end
local due = redis.call('ZSCORE', KEYS[2], ARGV[1])
if due then redis.call('HSET', KEYS[1], 'outbox_waits', due) end
if field(KEYS[1], 'post_failed_by') == ARGV[3] .. ' first' then return 1 end
local first = field(KEYS[1], 'post_error') == ''
redis.call('HSET', KEYS[1], 'post_error', ARGV[2],
  'post_failed_by', ARGV[3] .. (first and ' first' or ' again'))
return first and 1 or 0
