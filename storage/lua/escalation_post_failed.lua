-- Keep ARGV[2], what Slack answered a failed post of the card of the escalation step record
-- KEYS[1] (id ARGV[1]) reached, while that card is not posted; the first failure of each
-- step is audited. KEYS as in common.lua. ARGV: 3 now, 4 audit maxlen, 5 the step the card
-- is of (a post of a step the record has left behind is not its step's refusal).
-- Returns 1 for the step's first failed post, else 0 (also when gone, decided, posted, or
-- on to another step).
local key = KEYS[1]
if redis.call('EXISTS', key) == 0 or field(key, 'id') ~= ARGV[1] then return 0 end
if field(key, 'state') ~= 'pending' then return 0 end
local step = tonumber(field(key, 'escalated')) or 0
if step ~= tonumber(ARGV[5]) or step <= (tonumber(field(key, 'escalation_posted')) or 0) then
  return 0
end
local first = field(key, 'escalation_error') == ''
redis.call('HSET', key, 'escalation_error', ARGV[2])
if first then
  audit(KEYS[10], ARGV[4], 'escalation_not_posted', ARGV[1], '', ARGV[3],
    'step ' .. step .. ': ' .. ARGV[2])
end
return first and 1 or 0
