-- Remove consumer ARGV[2] of group ARGV[1] on stream KEYS[1] if nothing is pending for it:
-- checked and removed in one step, so no entry it read in between is lost.
-- Returns 1 when it was removed, 0 when it has entries pending.
if #redis.call('XPENDING', KEYS[1], ARGV[1], '-', '+', 1, ARGV[2]) > 0 then return 0 end
redis.call('XGROUP', 'DELCONSUMER', KEYS[1], ARGV[1], ARGV[2])
return 1
