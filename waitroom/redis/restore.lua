-- Rebuilds a show's queue state from the record, unless it is here already.
-- KEYS: 1 state, 2 seed, 3 grants, 4 gexp, 5 jti->user, 6 info, 7 the fans given back a ticket (join.lua)
-- ARGV: 1 cursor, 2 ceiling, 3 drawn ("1"/"0"), 4 drawCount, 5 drawDigest, 6 seed, 7 saleStartsAt ms (0:
--       unknown), then user jti expMs iatMs quadruples of the live admissions
-- Invariants kept: lastSeq starts at the recorded ceiling, above every ticket ever handed out, so a later joiner
-- never gets a ticket a receipt holder will present; the cursor and lastSeq never go back (a state that is still
-- partly here keeps its larger values); a live admission comes back as the fan's grant unless the fan has one.
if redis.call('HEXISTS', KEYS[1], 'ceiling') == 1 then
  return 0
end
local st = redis.call('HMGET', KEYS[1], 'cursor', 'lastSeq')
local cursor = math.max(tonumber(st[1] or '0'), tonumber(ARGV[1]))
local last = math.max(tonumber(st[2] or '0'), tonumber(ARGV[2]))
-- When and where the rebuild started: tickets at or below this ceiling and above this cursor were handed out
-- before the loss, and their fans coming back within the turn hold keep them (join.lua).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'cursor', cursor, 'lastSeq', last, 'ceiling', last, 'rebuiltAt', now,
  'rebuiltCursor', cursor, 'rebuiltCeiling', last)
redis.call('DEL', KEYS[7]) -- an earlier rebuild's, if it outlived the state
if ARGV[3] == '1' then
  redis.call('HSET', KEYS[1], 'drawn', '1', 'drawCount', ARGV[4], 'drawDigest', ARGV[5])
end
if ARGV[6] ~= '' then
  redis.call('SET', KEYS[2], ARGV[6], 'NX')
end
if tonumber(ARGV[7]) > 0 then
  redis.call('HSETNX', KEYS[6], 'saleStartsAt', ARGV[7])
end
for i = 8, #ARGV, 4 do
  local user, jti, exp, iat = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  if redis.call('HEXISTS', KEYS[3], user) == 0 then
    redis.call('HSET', KEYS[3], user, jti .. '|' .. exp .. '|' .. iat)
    redis.call('ZADD', KEYS[4], exp, jti)
    redis.call('HSET', KEYS[5], jti, user)
  end
end
return 1
