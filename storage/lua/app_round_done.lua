-- The app ran the round it held (decide_app.lua) to its end: no resume job is due for it.
-- KEYS as in common.lua for the record that closed the round, then 12 the shard's app
-- rounds. ARGV: 1 record id.
-- Returns 1, or 0 when the round had been handed to the resume worker meanwhile.
if redis.call('ZREM', KEYS[12], ARGV[1]) == 0 then return 0 end
redis.call('DEL', KEYS[11])
return 1
