-- Keep ARGV[2], what Slack answered a failed post of the card of the escalation step record
-- KEYS[1] (id ARGV[1]) reached, while that card is not posted; the first failure of each
-- step is audited. KEYS as in common.lua. ARGV: 3 now, 4 audit maxlen.
-- Returns 1 for the step's first failed post, else 0 (also when gone, decided or posted).
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= ARGV[1] then return 0 end
if field(key, 'state') ~= 'pending' then return 0 end
local step = tonumber(field(key, 'escalated')) or 0
local posted = field(key, 'escalation_ts') ~= '' and 1 or 0
local raw = field(key, 'escalation_cards')
if raw ~= '' then posted = posted + #cjson.decode(raw) end
if step <= posted then return 0 end
local first = field(key, 'escalation_error') == ''
redis.call('HSET', key, 'escalation_error', ARGV[2])
if first then
  audit(KEYS[10], ARGV[4], 'escalation_not_posted', ARGV[1], '', ARGV[3],
    'step ' .. step .. ': ' .. ARGV[2])
end
return first and 1 or 0
