-- The app ran the round it held (decide_app.lua) to its end: no resume job is due for it.
-- KEYS as in common.lua for the record that closed the round, then 12 the shard's app
-- rounds, 13 the round's records. ARGV: 1 record id.
-- Returns 1, or 0 when the round had been handed to the resume worker meanwhile.
redis.call('DEL', KEYS[13])
return redis.call('ZREM', KEYS[12], ARGV[1])
