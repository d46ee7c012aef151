-- Restores one show's queue state from the record, unless its settings are cached already.
-- KEYS: 1 config (rediskey.QueueConfig), 2 active (QueueActive), 3 revoked (QueueRevoked), 4 info (ShowInfo)
-- ARGV: 1 version, 2 enabled, 3 admitPerSecond, 4 maxActive, 5 tokenTtlSeconds, 6 paused, 7 turnHold, 8 bot,
--       9 number of live grants, then expMs jti pairs of the live grants, then expMs jti pairs of the revoked ones
-- Version 0 is the record's "no settings": the queue is off because no operator ever set one.
-- Invariant kept: settings in the cache mean the show's revocations and active admissions are there too, so the
-- settings go last, in the same script; readers that find them trust the rest.
-- A show without a record is cached (as off, version 0, on its own key, lost with the show's other keys) only
-- while booking's info says the show exists: a made-up show id leaves nothing behind.
-- Reply: 1 written, 0 not (settings cached already, or no record and no such show).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
if ARGV[1] == '0' and redis.call('EXISTS', KEYS[4]) == 0 then
  return 0
end
local live = tonumber(ARGV[9])
local i = 10
for _ = 1, live do
  redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i < #ARGV do
  redis.call('ZADD', KEYS[3], ARGV[i], ARGV[i + 1])
  redis.call('ZREM', KEYS[2], ARGV[i + 1])
  i = i + 2
end
redis.call('HSET', KEYS[1], 'enabled', ARGV[2], 'admitPerSecond', ARGV[3], 'maxActive', ARGV[4],
  'tokenTtlSeconds', ARGV[5], 'paused', ARGV[6], 'turnHold', ARGV[7], 'bot', ARGV[8], 'version', ARGV[1])
return 1
