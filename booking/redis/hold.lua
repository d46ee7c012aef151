-- Claims every requested seat for one booking, or none: the all-or-nothing heart of a hold.
-- KEYS[1] epoch, KEYS[2] fence counter, KEYS[3] the user's live holds (zset), KEYS[4] counters (hash),
-- KEYS[5] sold seats (set), KEYS[6..] the seat locks. All carry the show's hash tag: one slot, one script.
-- ARGV[1] booking id, ARGV[2] TTL ms, ARGV[3] now ms, ARGV[4] per-user seat cap, ARGV[5] seat events channel,
-- ARGV[6..] the seat ids, in the order of KEYS[6..]; then, optionally, '1' for a resale claim.
--
-- A resale claim (a listed ticket's seat, bought on the exchange) is the same claim of a seat that is sold: it
-- takes the lock only if the seat is in the sold set (still the seller's) and unlocked. The seat stays in the
-- sold set throughout, so no ordinary hold can take it while the buyer pays, and a lapsed resale hold leaves it
-- sold to the seller.
--
-- Invariants: a seat is locked by at most one booking (SET only after every seat was seen free, and the script
-- runs atomically); a lock's value "bookingID|fence" carries a fence larger than every fence handed out before
-- in this show, as the counter only grows within an epoch and Postgres only grows the epoch.
-- Returns {1, fence} | {0, taken seat ids...} | {-1} no epoch | {-2, seats held} over the user's cap. The same
-- claim run again (a retry) returns {1, fence} with the fence of its first run.
local epoch = redis.call('GET', KEYS[1])
if not epoch then
  return {-1}
end
-- The Redis client sends a script again when its reply timed out, with the same arguments. A claim that ran the
-- first time finds every seat locked by its own booking id (ids are never reused): it answers as it did, with
-- the fence it took, instead of reporting its own seats taken and leaving them locked for a booking never made.
local mine = ARGV[1] .. '|'
local resale = ARGV[#KEYS + 1] == '1'
local taken, own, ownFence = {}, {}, nil
for i = 6, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v and string.sub(v, 1, #mine) == mine then
    own[#own + 1] = ARGV[i]
    ownFence = string.sub(v, #mine + 1)
  elseif v or (redis.call('SISMEMBER', KEYS[5], ARGV[i]) == 1) ~= resale then
    taken[#taken + 1] = ARGV[i]
  end
end
if #own == #KEYS - 5 then
  return {1, ownFence}
end
-- Some seats still this booking's and the rest lapsed meanwhile: not a claim to repeat, and all of them taken.
for _, id in ipairs(own) do taken[#taken + 1] = id end
if #taken > 0 then
  redis.call('HINCRBY', KEYS[4], 'conflicts', 1)
  return {0, unpack(taken)}
end
local n = #KEYS - 5
local now = tonumber(ARGV[3])
-- Holds that lapsed leave the user's set by score (their expiry), so the cap counts live holds only.
redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
local held = 0
for _, m in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  held = held + tonumber(string.match(m, '|(%d+)$'))
end
if held + n > tonumber(ARGV[4]) then
  return {-2, held}
end
local c = redis.call('INCR', KEYS[2])
-- epoch in the high 32 bits; Lua numbers are doubles, exact up to 2^53, so epochs up to 2^21.
local fence = string.format('%d', tonumber(epoch) * 4294967296 + c)
local value = ARGV[1] .. '|' .. fence
for i = 6, #KEYS do
  redis.call('SET', KEYS[i], value, 'PX', ARGV[2])
  redis.call('PUBLISH', ARGV[5], '{"seatId":"' .. ARGV[i] .. '","status":"HELD"}')
end
redis.call('ZADD', KEYS[3], now + tonumber(ARGV[2]), ARGV[1] .. '|' .. n)
redis.call('PEXPIRE', KEYS[3], ARGV[2])
redis.call('HINCRBY', KEYS[4], 'holds', 1)
return {1, fence}
