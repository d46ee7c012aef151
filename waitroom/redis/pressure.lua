-- Counts one more proof-of-work challenge for a client's address prefix in a show, and reads the show's load.
-- KEYS: 1 pressure (prefix -> "count|atMs"), 2 bot stats
-- ARGV: 1 prefix, 2 half-life ms, 3 "0": read the count without adding this one
-- The count decays exponentially with the half-life, so a prefix that stops asking is soon cheap again, and one
-- that keeps asking stays expensive: the difficulty follows recent behaviour, with no window edge to wait out.
-- Reply: {pressure (this challenge included), new places a minute}
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local half = tonumber(ARGV[2])
local p = 0
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v then
  local c, at = string.match(v, '^([^|]+)|(%d+)$')
  if c then p = tonumber(c) * math.pow(2, -math.max(now - tonumber(at), 0) / half) end
end
if ARGV[3] ~= '0' then
  p = p + 1
  redis.call('HSET', KEYS[1], ARGV[1], tostring(p) .. '|' .. now)
  redis.call('HINCRBY', KEYS[2], 'issued', 1)
end
-- join.lua keeps the show's new places as a count decaying with a 60 s half-life: a steady rate r a minute
-- holds it at r / ln 2, so the rate is the count times ln 2.
local arr = redis.call('HMGET', KEYS[2], 'arr', 'arrAt')
local a = tonumber(arr[1] or '0') or 0
local at = tonumber(arr[2] or '0') or 0
if at > 0 then a = a * math.pow(2, -math.max(now - at, 0) / 60000) end
return {tostring(p), tostring(a * 0.6931471805599453)}
