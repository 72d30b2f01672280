-- Acknowledge decided click entries and uncount each from its record's waiting clicks,
-- only when this call acknowledged it (an entry acknowledged twice is uncounted once),
-- and take the refusals their deciders told off the untold refusals.
-- KEYS: 1 the click stream, 2 the untold refusals, 3 their reasons, 3 + i the waiting
-- counter of entry ARGV[2 + i].
-- ARGV: 1 group, 2 how many entries, 3.. entry ids, then the refusals told.
local entries = tonumber(ARGV[2])
for i = 1, entries do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[2 + i]) == 1 then
    if redis.call('DECR', KEYS[3 + i]) <= 0 then redis.call('DEL', KEYS[3 + i]) end
  end
end
for j = 3 + entries, #ARGV do
  redis.call('ZREM', KEYS[2], ARGV[j])
  redis.call('HDEL', KEYS[3], ARGV[j])
end
return entries
