-- Installs a fencing epoch issued by Postgres after Redis was found without one, and restores the sold seats.
-- KEYS[1] epoch, KEYS[2] fence counter, KEYS[3] sold seats (set). ARGV[1] the new epoch, ARGV[2..] sold seats.
-- Only a larger epoch replaces the current one: when two replicas race, the later epoch wins and tokens keep
-- growing either way (a new epoch restarts the counter, but its high half is larger).
local cur = tonumber(redis.call('GET', KEYS[1]) or '-1')
if tonumber(ARGV[1]) > cur then
  redis.call('SET', KEYS[1], ARGV[1])
  redis.call('DEL', KEYS[2])
end
for i = 2, #ARGV do
  redis.call('SADD', KEYS[3], ARGV[i])
end
return 1
