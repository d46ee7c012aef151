-- Replaces a show's cached settings with a newer version of the record's.
-- KEYS: 1 config
-- ARGV: 1 version, 2 enabled, 3 admitPerSecond, 4 maxActive, 5 tokenTtlSeconds, 6 paused, 7 turnHold, 8 bot
-- Reply: -1 nothing cached (the caller restores the whole state instead: settings alone would vouch for
-- revocations that are not there), 0 a version as new or newer is cached (two operators raced: the record's
-- order wins), 1 written.
-- Settings written without a version (SetSettings, for tools and tests) count as version 0, as does a show cached
-- as having no record (queue off): the record's first version, an operator's first change, replaces it at once.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return -1
end
local v = tonumber(redis.call('HGET', KEYS[1], 'version') or '0') or 0
if v >= tonumber(ARGV[1]) then
  return 0
end
redis.call('HSET', KEYS[1], 'enabled', ARGV[2], 'admitPerSecond', ARGV[3], 'maxActive', ARGV[4],
  'tokenTtlSeconds', ARGV[5], 'paused', ARGV[6], 'turnHold', ARGV[7], 'bot', ARGV[8], 'version', ARGV[1])
return 1
