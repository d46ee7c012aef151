-- Extends a hold's locks only if the booking still owns every one of them: a payment in flight must not revive
-- a seat that lapsed and may belong to someone else now.
-- KEYS[1..] the seat locks. ARGV[1] lock value "bookingID|fence", ARGV[2] new TTL ms.
-- Returns 1 when extended, 0 when a lock is gone or owned by another booking.
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1
