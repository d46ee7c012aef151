-- Refreshes heartbeats of fans still queued, with Redis's clock (the one admit.lua judges them by).
-- KEYS: 1 hb
-- ARGV: userIds
-- XX: only fans with a heartbeat entry (queued ones) are touched; a fan who has left the queue is not put back.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local n = 0
for i = 1, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', now, ARGV[i])
end
return n
