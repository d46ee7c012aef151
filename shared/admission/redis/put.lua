-- Replaces a show's cached settings with a newer version of the record's.
-- KEYS: 1 config
-- ARGV: 1 version, 2 n, then n arguments: field value pairs of the settings (redis.go's configFields)
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
redis.call('HSET', KEYS[1], 'version', ARGV[1], unpack(ARGV, 3, 2 + tonumber(ARGV[2])))
return 1
