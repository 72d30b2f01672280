-- Mark a request's approved command started, unless a later request superseded its
-- approval (what it acts on changed): checked and marked in one step, so a supersede
-- racing a start lets one through. KEYS: 1 the run's job hash, 2 the request's record.
-- ARGV: 1 "<ms> <attempt>", 2 how long (ms) the job hash is kept.
-- Returns {'superseded', record id of the superseding request} or {'started', the start
-- marked first}.
local by = field(KEYS[2], 'superseded_by')
if by ~= '' then return {'superseded', by} end
redis.call('HSETNX', KEYS[1], 'started', ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return {'started', redis.call('HGET', KEYS[1], 'started')}
