-- Index a record stored by a version without the open-to-channel index: only while it is
-- pending at this very entry of the pending-by-channel index, and open to its channel.
-- KEYS: 1 record, 2 pending-by-channel (its shard's). ARGV: 1 the record's entry there.
-- Returns 1 when indexed, 0 when not (decided meanwhile, or named approvers only).
if redis.call('ZSCORE', KEYS[2], ARGV[1]) == false then return 0 end
if field(KEYS[1], 'state') ~= 'pending' then return 0 end
if not json_field(KEYS[1], 'policy').open_to_channel then return 0 end
redis.call('ZADD', by_open_channel(KEYS[2]), 0, ARGV[1])
return 1
