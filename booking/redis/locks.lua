-- Reads seat locks with the time each has left, in one step so a value goes with its own expiry (a lock that
-- lapsed and was claimed again in between would otherwise lend the new claim's age to the old value).
-- KEYS[1..] the seat locks. Returns {i, value, pttl, ...} for every KEYS[i] that exists; pttl is -1 for a lock
-- without an expiry.
local out = {}
for i = 1, #KEYS do
  local v = redis.call('GET', KEYS[i])
  if v then
    out[#out + 1] = i
    out[#out + 1] = v
    out[#out + 1] = redis.call('PTTL', KEYS[i])
  end
end
return out
