-- Keep ARGV[2], what Slack answered a failed post, on record KEYS[1] (id ARGV[1]) while
-- its card is not posted; a record gone or posted meanwhile is left alone.
if redis.call('EXISTS', KEYS[1]) == 0 or field(KEYS[1], 'id') ~= ARGV[1] then return 0 end
if field(KEYS[1], 'message_ts') ~= '' then return 0 end
redis.call('HSET', KEYS[1], 'post_error', ARGV[2])
return 1
