-- Refreshes heartbeats of fans still queued, with Redis's clock (the one admit.lua judges them by).
-- KEYS: 1 hb
-- ARGV: userIds
-- XX: only fans with a heartbeat entry (queued ones) are touched; a fan who has left the queue is not put back.
-- Returns the fans that have no entry: left the queue (admitted, skipped) or forgotten by a Redis that lost its
-- data, which the caller tells apart.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local missing = {}
for i = 1, #ARGV do
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', now, ARGV[i]) == 0 and not redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    missing[#missing + 1] = ARGV[i]
  end
end
return missing
