-- Compare-and-delete: drops only the locks that still carry this booking's value, so a stale cancel (or a
-- sweep of an expired booking) never frees a seat that another, newer hold owns now.
-- KEYS[1] the user's live holds (zset), KEYS[2] sold seats (set), KEYS[3..] the seat locks.
-- ARGV[1] lock value "bookingID|fence", ARGV[2] the user's holds member, ARGV[3] seat events channel,
-- ARGV[4] "AVAILABLE" (release) or "BOOKED" (the seats were sold: they join the sold set),
-- ARGV[5..] the seat ids, in the order of KEYS[3..].
-- Returns the seat ids whose lock this booking still owned.
local freed = {}
local sold = ARGV[4] == 'BOOKED'
for i = 3, #KEYS do
  local seat = ARGV[i + 2]
  local owned = redis.call('GET', KEYS[i]) == ARGV[1]
  if owned then
    redis.call('DEL', KEYS[i])
    freed[#freed + 1] = seat
  end
  if sold then
    redis.call('SADD', KEYS[2], seat)
  end
  if owned or sold then
    -- A resale hold's seat is sold all along (hold.lua): released, it is the seller's again, not on sale.
    local status = ARGV[4]
    if not sold and redis.call('SISMEMBER', KEYS[2], seat) == 1 then
      status = 'BOOKED'
    end
    redis.call('PUBLISH', ARGV[3], '{"seatId":"' .. seat .. '","status":"' .. status .. '"}')
  end
end
redis.call('ZREM', KEYS[1], ARGV[2])
return freed
