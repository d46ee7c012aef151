-- Join (ARGV[2] = "1") or look up (ARGV[2] = "0") a fan's place in one show's queue, atomically.
-- KEYS: 1 config, 2 info, 3 state, 4 wait, 5 pre, 6 hb, 7 grants, 8 active (rediskey.QueueActive)
-- ARGV: 1 userId, 2 join flag, 3 receipted seq (0: none): a ticket the fan's verified place receipt proves
-- Invariants kept: a fan holds at most one live grant or one ticket, never both (a fan with a live grant is
-- answered "admitted" and gets no ticket); a new ticket (seq) is handed out once, in increasing order, never
-- above the ceiling reserved in the record (so a queue rebuilt from the record, whose lastSeq starts at that
-- ceiling, never hands a receipted ticket to someone else), and after opening only once the pre-opening draw
-- has been written, so every pre-opening fan's ticket is smaller than every later fan's. A receipted ticket is
-- given back only while it is still ahead of the cursor (the fan was forgotten, not served or skipped).
-- Reply: {kind, ...}: unknown | restore | closed | sold_out | admitted grantValue | pre opensAt paused |
-- pending | waiting seq cursor rate paused | reserve lastSeq | none
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local user = ARGV[1]
local join = ARGV[2] == '1'
local receipted = tonumber(ARGV[3]) or 0

local cfg = redis.call('HMGET', KEYS[1], 'enabled', 'admitPerSecond', 'paused')
if not cfg[1] then
  return {'unknown'} -- no settings cached: never read as "closed" before the record has been asked
end
-- One read of the show's info serves the closed check and everything below.
local info = redis.call('HMGET', KEYS[2], 'closed', 'available', 'held', 'saleStartsAt')
if cfg[1] ~= '1' or info[1] == '1' then -- off, or the operator closed the sale
  return {'closed'}
end
local rate = cfg[2] or '10'
local paused = cfg[3] or '0'

local g = redis.call('HGET', KEYS[7], user)
if g then
  local jti, exp = string.match(g, '^([^|]*)|(%d+)')
  if jti and tonumber(exp) > now and redis.call('ZSCORE', KEYS[8], jti) then
    return {'admitted', g}
  end
end

local st = redis.call('HMGET', KEYS[3], 'cursor', 'drawn', 'ceiling', 'lastSeq')
if not st[3] then
  return {'restore'} -- the queue's own state is not here (new queue, or lost): rebuild it from the record
end
local cursor = tonumber(st[1] or '0')

local seq = redis.call('ZSCORE', KEYS[4], user)
-- Whether a lookup finds the fan in the queue or the pre-opening pool; a join never asks (every answer below
-- that depends on it is the same for a join), so a join does not read the pool.
local member = join or seq or redis.call('SISMEMBER', KEYS[5], user) == 1
if info[2] and tonumber(info[2]) == 0 and tonumber(info[3] or '0') == 0 then
  if member then return {'sold_out'} end
  return {'none'}
end

if join then
  redis.call('ZADD', KEYS[6], now, user)
end
if seq then
  return {'waiting', tonumber(seq), cursor, rate, paused}
end
if join and receipted > cursor then
  redis.call('ZADD', KEYS[4], receipted, user)
  return {'waiting', receipted, cursor, rate, paused}
end

local opens = tonumber(info[4] or '') or 0
if now < opens then
  if join then redis.call('SADD', KEYS[5], user) end
  if member then return {'pre', opens, paused} end
  return {'none'}
end

if st[2] ~= '1' then
  if redis.call('SCARD', KEYS[5]) > 0 then
    if member then return {'pending', opens} end
    return {'none'}
  end
  -- Nobody joined before a known opening: the draw is done, empty. Without a known opening there is no draw
  -- (and no seed to reveal) until a sale opening appears.
  if opens > 0 then redis.call('HSET', KEYS[3], 'drawn', '1') end
end
if not join then
  return {'none'}
end
-- Taken off the queue earlier (admitted and done, or skipped as gone): a fresh ticket at the back.
local last = tonumber(st[4] or '0')
if last + 1 > tonumber(st[3]) then
  return {'reserve', last}
end
local s = redis.call('HINCRBY', KEYS[3], 'lastSeq', 1)
redis.call('ZADD', KEYS[4], s, user)
return {'waiting', s, cursor, rate, paused}
