-- Move the leases of members ARGV[3..] on the sorted set KEYS[1] (a queue scored by when
-- another process may claim each entry) from their end ARGV[1] to ARGV[2], each only if
-- ARGV[1] is still its end: their claimer is still handing them to Slack (Slack slow, or
-- a rate limit slept out), so no other process claims them meanwhile. One taken off
-- (done) or queued again is left as it is. One whose end is ARGV[2] already was moved by
-- this very call, sent again after its reply was lost: it counts as moved. Returns how
-- many moved.
local moved = 0
for i = 3, #ARGV do
  local ends = redis.call('ZSCORE', KEYS[1], ARGV[i])
  if ends == ARGV[1] then
    redis.call('ZADD', KEYS[1], 'XX', ARGV[2], ARGV[i])
    moved = moved + 1
  elseif ends == ARGV[2] then
    moved = moved + 1
  end
end
return moved
