-- Index a record stored by a version without the open-to-channel index: only while it is
-- pending at this very entry of the pending-by-channel index, at each channel whose
-- members may decide it (its own when open to it, an escalation step's when open to it).
-- KEYS: 1 record, 2 pending-by-channel (its shard's). ARGV: 1 the record's entry there.
-- Returns 1 when indexed, 0 when not (decided meanwhile, or named approvers only).
if redis.call('ZSCORE', KEYS[2], ARGV[1]) == false then return 0 end
if field(KEYS[1], 'state') ~= 'pending' then return 0 end
local rid = field(KEYS[1], 'id')
local channels = open_channels(KEYS[1], field(KEYS[1], 'channel'))
for _, channel in ipairs(channels) do
  redis.call('ZADD', by_open_channel(KEYS[2]), 0, channel_member(KEYS[1], rid, channel))
end
return #channels > 0 and 1 or 0
