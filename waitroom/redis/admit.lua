-- One admission tick for one show (pop-and-issue), run by any replica at any time.
-- KEYS: 1 config, 2 info, 3 state, 4 wait, 5 pre, 6 hb, 7 grants, 8 active (rediskey.QueueActive), 9 gexp,
--       10 jti->user, 11 unrecorded (jti -> ticket), 12 skipped (user -> when), 13 bot stats (holding the arrivals' ring: arrivals.lua),
--       14 arrival marks (join.lua)
-- ARGV: 1 nonce (unique per call, but a call the client retries runs again with it), 2 grace ms, 3 max fans popped per call (0: admit nobody this tick),
--       4 ms after which unrecorded grants are handed out again for recording,
--       5 the fans to admit, decided by the caller (-1: this script decides from the rate and the active slots;
--       a partitioned queue's tick decides for all its lines, waitroom/redis/lines.go, and this line's rate
--       budget is not touched), 6 how many of the line's next tickets to answer after admitting,
--       7 answer the marks above this ticket (-1: none), 8 with ARGV[5] >= 0, the last ticket the caller's merge
--       chose from this line (0: none): nobody behind it is admitted, so a fan skipped as absent, or a ticket
--       another replica's tick took meanwhile, does not let a later fan of this line pass an earlier one of another
-- Invariants kept, atomically:
--  * the rate is not multiplied by the number of replicas: credit accrues from the last tick's timestamp stored
--    here (Redis TIME), whoever ran it, so two replicas ticking share one budget; unused credit is not banked
--    beyond the fraction of one fan, and elapsed time counts at most one second;
--  * active grants never exceed maxActive: expired grants are dropped first, then at most maxActive - active
--    are admitted;
--  * nobody is admitted twice: a fan is popped (ZPOPMIN) before being granted, and join refuses a new ticket to
--    a fan holding a live grant;
--  * a fan without a heartbeat in the last grace ms is skipped (removed) and does not use a slot; when they were
--    skipped is kept (KEYS[12], a day at most), so join.lua can put them back at the head of the line if they
--    return with their place receipt within the show's turn hold;
--  * the cursor (seq of the last fan popped) only grows, so positions (seq - cursor) never grow; a fan put back
--    at the head holds a ticket behind the cursor and is popped first without moving it back;
--  * nothing is decided on state that is not here: without cached settings the reply is {'unknown'}, and a
--    queue that is on but has no state (no ticket ceiling) replies {'restore'}, writing nothing either way, so a
--    Redis that lost its data never reads as "queue off" and never restarts a queue's cursor at zero;
--  * while the operator has paused admission nobody is admitted, and no credit accrues (a resume does not
--    release a burst);
--  * every grant made here is unrecorded (KEYS[11], scored by the fan's ticket) until tokens.lua stores its
--    token, which the caller does only once PostgreSQL has recorded it: no token exists for a grant the record
--    lacks. Unrecorded grants older than ARGV[4] ms (their admitter died, or the record was down) are handed to
--    this tick's caller to record, at most once per ARGV[4] ms; the reply's durable cursor stays below the
--    ticket of every unrecorded grant, so a cursor recorded from it never passes a fan whose admission a lost
--    Redis would take with it.
--  * threshold mode: while engaged, active grants never exceed the active threshold either (so the live
--    admissions pass it by at most what join.lua admitted at once before engaging, which is nothing); the queue
--    engages when a figure reaches its threshold or anyone is in line (the pre-opening pool included), and
--    disengages only once the line has been empty and both figures under their thresholds for the cooldown.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nonce = ARGV[1]
local grace = tonumber(ARGV[2])
local maxScan = tonumber(ARGV[3])
local retry = tonumber(ARGV[4])
local forced = tonumber(ARGV[5] or '-1') or -1
local upto = tonumber(ARGV[8] or '0') or 0
if forced < 0 then upto = 0 end

local cfg = redis.call('HMGET', KEYS[1], 'enabled', 'admitPerSecond', 'maxActive', 'tokenTtlSeconds', 'paused',
  'mode', 'activeThreshold', 'arrivalThreshold', 'cooldown')
if not cfg[1] then
  return {'unknown'}
end
local enabled = cfg[1] == '1'
if enabled and redis.call('HEXISTS', KEYS[3], 'ceiling') == 0 then
  return {'restore'}
end
local paused = cfg[5] == '1'
local rate = tonumber(cfg[2] or '') or 10
local maxActive = tonumber(cfg[3] or '') or 200
local ttl = tonumber(cfg[4] or '') or 600
local threshold = enabled and cfg[6] == 'threshold'
local activeLimit = tonumber(cfg[7] or '') or maxActive
local arrivalLimit = tonumber(cfg[8] or '') or 0
if threshold then maxActive = math.min(maxActive, activeLimit) end

-- Expired grants free their slot; our own bookkeeping of them goes too (bounded per tick).
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[12], '-inf', now - 86400000)
local old = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', now, 'LIMIT', 0, 1000)
for _, jti in ipairs(old) do
  local u = redis.call('HGET', KEYS[10], jti)
  if u then
    local g = redis.call('HGET', KEYS[7], u)
    if g and string.sub(g, 1, #jti + 1) == jti .. '|' then
      redis.call('HDEL', KEYS[7], u)
    end
    redis.call('HDEL', KEYS[10], jti)
  end
  redis.call('ZREM', KEYS[9], jti)
  redis.call('ZREM', KEYS[11], jti)
end

-- Overdue recordings, taken before this tick's own grants join them.
local overdue = {}
if redis.call('ZCARD', KEYS[11]) > 0 and now - (tonumber(redis.call('HGET', KEYS[3], 'unrecTry') or '') or 0) >= retry then
  redis.call('HSET', KEYS[3], 'unrecTry', now)
  for _, jti in ipairs(redis.call('ZRANGE', KEYS[11], 0, 999)) do
    local u = redis.call('HGET', KEYS[10], jti)
    local g = u and redis.call('HGET', KEYS[7], u)
    if g and string.sub(g, 1, #jti + 1) == jti .. '|' then
      local exp, iat, tok = string.match(g, '^[^|]*|(%d+)|(%d+)(.*)$')
      if tok == '' then
        overdue[#overdue + 1] = u
        overdue[#overdue + 1] = jti
        overdue[#overdue + 1] = exp
        overdue[#overdue + 1] = iat
      else
        redis.call('ZREM', KEYS[11], jti) -- its token is stored: recorded
      end
    else
      redis.call('ZREM', KEYS[11], jti) -- the grant is gone (expired)
    end
  end
end
local active = redis.call('ZCARD', KEYS[8])

local st = redis.call('HMGET', KEYS[3], 'lastTick', 'carry', 'cursor', 'lastSeq', 'admittedTotal', 'skippedTotal', 'drawn',
  'rebuiltCeiling')
local lastTick = tonumber(st[1] or '')
local carry = tonumber(st[2] or '') or 0
local cursor = tonumber(st[3] or '') or 0
local lastSeq = tonumber(st[4] or '') or 0
local admittedTotal = tonumber(st[5] or '') or 0
local skippedTotal = tonumber(st[6] or '') or 0
local drawn = st[7] == '1'

local info = redis.call('HMGET', KEYS[2], 'available', 'held', 'saleStartsAt', 'closed')
local opens = tonumber(info[3] or '') or 0
local phase = 'open'
if not enabled or info[4] == '1' then -- off, or the operator closed the sale (booking's ShowInfo)
  phase = 'closed'
elseif info[1] and tonumber(info[1]) == 0 and tonumber(info[2] or '0') == 0 then
  phase = 'sold_out'
elseif now < opens then
  phase = 'pre'
elseif not drawn then
  if redis.call('SCARD', KEYS[5]) > 0 then
    phase = 'pending'
  elseif opens > 0 then -- an empty draw (see join.lua)
    redis.call('HSET', KEYS[3], 'drawn', '1')
    drawn = true
  end
end
if phase == 'open' and paused then
  phase = 'paused'
end

local out = {}
local granted = 0
local skipped = 0
if phase == 'open' then
  local elapsed = 0
  if lastTick then elapsed = math.min(math.max(now - lastTick, 0), 1000) end
  local credit = carry + rate * elapsed / 1000
  local want = math.floor(credit)
  if forced >= 0 then want = forced end
  local n = math.min(want, maxActive - active)
  local scanned = 0
  local iat = now - now % 1000
  local exp = iat + ttl * 1000
  -- Pop in batches (one ZPOPMIN, ZMSCORE and ZREM per batch, one write per key for the grants): a tick that
  -- admits hundreds costs a handful of commands, not a handful per fan.
  while granted < n and scanned < maxScan do
    local p = redis.call('ZPOPMIN', KEYS[4], math.min(n - granted, maxScan - scanned, 1000)) -- unpack() limit
    if #p == 0 then break end
    local users, seqs, back = {}, {}, {}
    for i = 1, #p, 2 do
      if upto > 0 and tonumber(p[i + 1]) > upto then
        back[#back + 1] = p[i + 1]
        back[#back + 1] = p[i]
      else
        users[#users + 1] = p[i]
        seqs[#seqs + 1] = p[i + 1]
        cursor = math.max(cursor, tonumber(p[i + 1]))
      end
    end
    if #back > 0 then redis.call('ZADD', KEYS[4], unpack(back)) end
    if #users == 0 then break end
    scanned = scanned + #users
    local hbs = redis.call('ZMSCORE', KEYS[6], unpack(users))
    redis.call('ZREM', KEYS[6], unpack(users))
    local zargs, jargs, gargs, uargs = {}, {}, {}, {}
    for i, user in ipairs(users) do
      local hb = tonumber(hbs[i] or '')
      if hb and hb >= now - grace then
        granted = granted + 1
        -- The nonce alone is not enough: the Redis client sends a script again when its reply timed out, and
        -- that second run, with the same nonce, admits the fans behind the first run's. Numbering by the
        -- show's running total keeps every jti unique whichever run made it (admittedTotal is stored below,
        -- in the same run); two fans sharing a jti would share a revocation.
        local jti = nonce .. '.' .. (admittedTotal + granted)
        zargs[#zargs + 1] = exp
        zargs[#zargs + 1] = jti
        jargs[#jargs + 1] = jti
        jargs[#jargs + 1] = user
        gargs[#gargs + 1] = user
        gargs[#gargs + 1] = jti .. '|' .. exp .. '|' .. iat
        uargs[#uargs + 1] = seqs[i]
        uargs[#uargs + 1] = jti
        out[#out + 1] = user
        out[#out + 1] = jti
      else
        skipped = skipped + 1
        redis.call('ZADD', KEYS[12], now, user)
      end
    end
    if #zargs > 0 then
      redis.call('ZADD', KEYS[8], unpack(zargs))
      redis.call('ZADD', KEYS[9], unpack(zargs))
      redis.call('HSET', KEYS[10], unpack(jargs))
      redis.call('HSET', KEYS[7], unpack(gargs))
      redis.call('ZADD', KEYS[11], unpack(uargs))
    end
    if #back > 0 then break end -- the merge's last ticket of this line is behind
  end
  if granted == want then carry = credit - want else carry = 0 end
  out[#out + 1] = iat
  out[#out + 1] = exp
else
  carry = 0
end
admittedTotal = admittedTotal + granted
skippedTotal = skippedTotal + skipped
if phase ~= 'closed' and forced < 0 then -- a switched-off (or never configured) queue leaves no state behind
  redis.call('HSET', KEYS[3], 'lastTick', now, 'carry', tostring(carry), 'cursor', cursor,
    'admittedTotal', admittedTotal, 'skippedTotal', skippedTotal)
elseif phase ~= 'closed' then
  redis.call('HSET', KEYS[3], 'cursor', cursor, 'admittedTotal', admittedTotal, 'skippedTotal', skippedTotal)
end
-- Marks behind the cursor order nobody now: all but the floor mark of the next ticket go.
local floor = redis.call('ZREVRANGEBYSCORE', KEYS[14], cursor + 1, '-inf', 'WITHSCORES', 'LIMIT', 0, 1)
if #floor == 2 then redis.call('ZREMRANGEBYSCORE', KEYS[14], '-inf', '(' .. floor[2]) end

local waiting = redis.call('ZCARD', KEYS[4])
if not drawn then waiting = waiting + redis.call('SCARD', KEYS[5]) end
local durable = cursor
local low = redis.call('ZRANGE', KEYS[11], 0, 0, 'WITHSCORES')
if #low == 2 then durable = math.min(durable, tonumber(low[2]) - 1) end

local arrived = arrivals(KEYS[13], now, 0, {})
local engaged = enabled and not threshold -- "always" always queues
if threshold and phase ~= 'closed' then
  local eng = redis.call('HMGET', KEYS[3], 'engaged', 'underSince')
  engaged = eng[1] == '1'
  local under = active + granted < activeLimit and (arrivalLimit == 0 or arrived < arrivalLimit)
  if waiting > 0 or not under then
    if not engaged then redis.call('HSET', KEYS[3], 'engaged', '1', 'engagedAt', now) end
    if eng[2] then redis.call('HDEL', KEYS[3], 'underSince') end
    engaged = true
  elseif engaged then
    local since = tonumber(eng[2] or '')
    if not since then
      redis.call('HSET', KEYS[3], 'underSince', now)
    elseif now - since >= (tonumber(cfg[9] or '') or 60) * 1000 then
      redis.call('HSET', KEYS[3], 'engaged', '0')
      redis.call('HDEL', KEYS[3], 'underSince')
      engaged = false
    end
  end
end
local engagedFlag = 0
if engaged then engagedFlag = 1 end
-- After a rebuild, until the cursor passes the rebuilt ceiling: the tickets up to it that nobody in line holds
-- (handed out before the loss to fans not back, or reserved and never handed out). A fan behind the ceiling is
-- told a position without them: an honest count of the fans ahead, not of ticket numbers.
local gapEnd, gap = tonumber(st[8] or '') or 0, 0
if gapEnd > cursor then
  gap = gapEnd - cursor - redis.call('ZCOUNT', KEYS[4], '(' .. cursor, gapEnd)
else
  gapEnd = 0
end
local heads, marks = {}, {}
if tonumber(ARGV[6] or '0') > 0 then
  heads = redis.call('ZRANGE', KEYS[4], 0, tonumber(ARGV[6]) - 1, 'WITHSCORES')
end
if tonumber(ARGV[7] or '-1') >= 0 then
  marks = redis.call('ZRANGEBYSCORE', KEYS[14], '(' .. ARGV[7], '+inf', 'WITHSCORES')
end
return {phase, cursor, lastSeq, waiting, active + granted, admittedTotal, skippedTotal, now, opens,
  tostring(rate), maxActive, out, durable, overdue, engagedFlag, arrived, gapEnd, gap, heads, marks, skipped}
