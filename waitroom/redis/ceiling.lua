-- Raises a show's ticket ceiling to one just reserved in the record.
-- KEYS: 1 state
-- ARGV: 1 ceiling
-- Only raises, and only on a state that has a ceiling: a state lost meanwhile is rebuilt whole by restore.lua,
-- never half-made here.
local c = redis.call('HGET', KEYS[1], 'ceiling')
if not c then
  return -1
end
if tonumber(ARGV[1]) > tonumber(c) then
  redis.call('HSET', KEYS[1], 'ceiling', ARGV[1])
end
return 1
