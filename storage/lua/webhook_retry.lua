-- Keep delivery ARGV[1] (its key KEYS[2], in the deliveries due KEYS[1]) as ARGV[3] (its
-- failed attempt counted), due again at ARGV[4] ms, only while it is still leased to the
-- caller until ARGV[2] ms, as its claim left it: a delivery another sender took over since
-- (its lease ran out) is that sender's, and one it finished stays finished.
-- Returns 1 when kept, else 0.
if tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1])) ~= tonumber(ARGV[2]) then return 0 end
redis.call('SET', KEYS[2], ARGV[3], 'XX', 'KEEPTTL')
redis.call('ZADD', KEYS[1], 'XX', ARGV[4], ARGV[1])
return 1
