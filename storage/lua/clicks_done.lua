-- Acknowledge decided click entries and uncount each from its record's waiting clicks,
-- only when this call acknowledged it (an entry acknowledged twice is uncounted once).
-- KEYS: 1 the click stream, 1 + i the waiting counter of entry ARGV[1 + i].
-- ARGV: 1 group, 2.. entry ids.
for i = 2, #ARGV do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    if redis.call('DECR', KEYS[i]) <= 0 then redis.call('DEL', KEYS[i]) end
  end
end
return #ARGV - 1
