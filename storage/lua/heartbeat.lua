-- Keep the entries consumer ARGV[2] is still handling: reset their idle time, so no other
-- consumer takes them over, and extend each one's run lease while this consumer holds it.
-- An entry another consumer took over already is left to it.
-- KEYS: 1 the stream, then optionally one run lease per entry (KEYS[1 + i] for ARGV[3 + i]).
-- ARGV: 1 group, 2 consumer, 3 lease ms, 4.. entry ids. Returns how many were kept.
local kept = 0
for i = 4, #ARGV do
  local id = ARGV[i]
  local pending = redis.call('XPENDING', KEYS[1], ARGV[1], id, id, 1)
  if pending[1] and pending[1][2] == ARGV[2] then
    redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[2], 0, id, 'JUSTID')
    kept = kept + 1
    local lease = KEYS[i - 2]
    if lease and redis.call('GET', lease) == id .. ' ' .. ARGV[2] then
      redis.call('PEXPIRE', lease, ARGV[3])
    end
  end
end
return kept
