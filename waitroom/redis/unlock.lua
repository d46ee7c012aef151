-- Drops a lock only if its holder still holds it.
-- KEYS: 1 the lock; ARGV: 1 the holder's value
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
