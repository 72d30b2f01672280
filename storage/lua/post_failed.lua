-- Keep ARGV[2], what Slack answered a failed post, on record KEYS[1] (id ARGV[1]) while
-- its card is not posted; a record gone or posted meanwhile is left alone. Returns 1 for
-- the card's first failed post, else 0.
if redis.call('EXISTS', KEYS[1]) == 0 or field(KEYS[1], 'id') ~= ARGV[1] then return 0 end
if field(KEYS[1], 'message_ts') ~= '' then return 0 end
local first = field(KEYS[1], 'post_error') == ''
redis.call('HSET', KEYS[1], 'post_error', ARGV[2])
return first and 1 or 0
