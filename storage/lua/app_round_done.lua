-- The app ran the round it held (decide_app.lua) to its end: no resume job is due for it.
-- KEYS as in common.lua for the record that closed the round, then 12 the shard's app
-- rounds, 13 the round's records. ARGV: 1 record id, 2 this call's token (the same call
-- sent again after its reply was lost is answered as the first time).
-- Returns 1, or 0 when the round had been handed to the resume worker meanwhile.
local mine = ARGV[2] .. ' '
if field(KEYS[1], 'round_let_go_by') == mine then return 1 end
redis.call('DEL', KEYS[13])
if redis.call('ZREM', KEYS[12], ARGV[1]) == 0 then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('HSET', KEYS[1], 'round_let_go_by', mine) end
return 1
