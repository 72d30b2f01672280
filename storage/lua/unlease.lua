-- Remove ARGV[1] from the sorted set KEYS[1] if its score is still ARGV[2], the end of the
-- lease its claimer was given: an entry queued again meanwhile stays.
if redis.call('ZSCORE', KEYS[1], ARGV[1]) == ARGV[2] then
  return redis.call('ZREM', KEYS[1], ARGV[1])
end
return 0
