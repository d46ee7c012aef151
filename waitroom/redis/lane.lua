-- A fan's lane (lanes.go): the lane they are held to, else their invitation's ("" the general lane), and, at a
-- join, holding them to it from then on, in one round trip: both keys share the fan's invitation bucket's hash tag.
-- KEYS: 1 the lanes fans are held to (rediskey.FanLane), 2 the invitations' copy (rediskey.Invitation)
-- ARGV: 1 userId, 2 "1" to hold the fan to the lane found when they are not held to one yet
-- Reply: {lane name, "1" if they were held to it already, else "0"}
-- A fan is held to their lane from their first join so that an invitation drawn while they wait in another
-- lane's line never routes them to a second ticket. Holding them before the join's own answer is harmless: a join
-- refused still puts them, next time, in the lane they would have joined.
local lane = redis.call('HGET', KEYS[1], ARGV[1])
if lane then
  return {lane, '1'}
end
lane = redis.call('HGET', KEYS[2], ARGV[1]) or ''
if ARGV[2] == '1' then
  redis.call('HSET', KEYS[1], ARGV[1], lane)
end
return {lane, '0'}
