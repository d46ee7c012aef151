-- A bypass code's step for one fan of one show (waitroom/bypass.go): look (ARGV[2] = "look"), or admit at once
-- with a grant the caller has recorded in PostgreSQL and signed (ARGV[2] = "admit").
-- KEYS: 1 config, 2 info, 3 state, 4 wait, 5 pre, 6 hb, 7 grants, 8 active (rediskey.QueueActive), 9 gexp,
--       10 jti->user
-- ARGV: 1 userId, 2 mode, 3 jti, 4 exp ms, 5 iat ms, 6 token
-- Reply: unknown | restore | closed | sold_out | admitted grantValue | refused pre|paused | ok | granted
-- Invariants kept, as join.lua and admit.lua keep them: a fan holds at most one live grant or one ticket, never
-- both, so the fan admitted here leaves the line and the pre-opening pool (admit.lua would otherwise grant them a
-- second time when their ticket came up); a fan holding a live grant keeps it and gets no second one; the grant
-- takes a slot among the show's active admissions (KEYS[8]), so the line admits one fewer while it lasts; it is
-- written with its token, since the caller recorded it first, and so never enters the unrecorded set. Nothing is
-- decided on state that is not here: without settings or the queue's own state the reply asks for a restore.
-- Admitting does not look at the phase again: the look before the caller spent the code's use decided it.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local user = ARGV[1]

local cfg = redis.call('HMGET', KEYS[1], 'enabled', 'paused')
if not cfg[1] then
  return {'unknown'}
end
local info = redis.call('HMGET', KEYS[2], 'closed', 'available', 'held', 'saleStartsAt')
if cfg[1] ~= '1' or info[1] == '1' then
  return {'closed'}
end
local g = redis.call('HGET', KEYS[7], user)
if g then
  local jti, exp = string.match(g, '^([^|]*)|(%d+)')
  if jti and tonumber(exp) > now and redis.call('ZSCORE', KEYS[8], jti) then
    return {'admitted', g}
  end
end
if redis.call('HEXISTS', KEYS[3], 'ceiling') == 0 then
  return {'restore'}
end

if ARGV[2] == 'look' then
  if info[2] and tonumber(info[2]) == 0 and tonumber(info[3] or '0') == 0 then
    return {'sold_out'}
  end
  if now < (tonumber(info[4] or '') or 0) then
    return {'refused', 'pre'}
  end
  if cfg[2] == '1' then
    return {'refused', 'paused'}
  end
  return {'ok'}
end

local jti, exp = ARGV[3], tonumber(ARGV[4])
redis.call('ZREM', KEYS[4], user)
redis.call('SREM', KEYS[5], user)
redis.call('ZREM', KEYS[6], user)
redis.call('HSET', KEYS[7], user, jti .. '|' .. ARGV[4] .. '|' .. ARGV[5] .. '|' .. ARGV[6])
redis.call('ZADD', KEYS[8], exp, jti)
redis.call('ZADD', KEYS[9], exp, jti)
redis.call('HSET', KEYS[10], jti, user)
redis.call('HINCRBY', KEYS[3], 'bypassedTotal', 1)
return {'admitted', redis.call('HGET', KEYS[7], user)}
