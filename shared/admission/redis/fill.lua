-- Restores one show's queue state from the record, unless its settings are cached already.
-- KEYS: 1 config (rediskey.QueueConfig), 2 active (QueueActive), 3 revoked (QueueRevoked), 4 info (ShowInfo)
-- ARGV: 1 version, 2 n, then n arguments: field value pairs of the settings (redis.go's configFields), then the
--       number of live grants, then expMs jti pairs of the live grants, then expMs jti pairs of the revoked ones
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
local n = tonumber(ARGV[2])
local live = tonumber(ARGV[3 + n])
local i = 4 + n
for _ = 1, live do
  redis.call('ZADD', KEYS[2], ARGV[i], ARGV[i + 1])
  i = i + 2
end
while i < #ARGV do
  redis.call('ZADD', KEYS[3], ARGV[i], ARGV[i + 1])
  redis.call('ZREM', KEYS[2], ARGV[i + 1])
  i = i + 2
end
redis.call('HSET', KEYS[1], 'version', ARGV[1], unpack(ARGV, 3, 2 + n))
return 1
