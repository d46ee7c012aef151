-- Join (ARGV[2] = "1") or look up (ARGV[2] = "0") a fan's place in one show's queue, atomically.
-- KEYS: 1 config, 2 info, 3 state, 4 wait, 5 pre, 6 hb, 7 grants, 8 active (rediskey.QueueActive), 9 skipped,
--       10 bot stats, 11 places per prefix, 12 shadow, 13 browsers, 14 spent challenge (or an unused key),
--       15 gexp, 16 jti->user, 17 unrecorded (as admit.lua's), 18 solve times, 19 the fans given back a ticket
--       from before the last rebuild, 20 the arrival marks (waitroom/lines.go: seq -> Redis ms); the bot stats
--       (10) hold the arrivals' ring (arrivals.lua)
-- ARGV: 1 userId, 2 join flag, 3 receipted seq (0: none): a ticket the fan's verified place receipt proves,
--       4 the guard's verdict on a new place ("ok", a refusal, or a suspect's reason), 5 the client's prefix
--       ("": a join the waiting room makes itself, for a fan already live), 6 places a prefix may take,
--       7 "1": suspects get the infinite queue, 8 ms the spent challenge must be remembered (0: no challenge),
--       9 browser session id ("" none), 10 solve ms (-1 none), 11 turn hold ms, 12 nonce (an admission's jti),
--       13 what the admission record says of a fan whose ticket the cursor had passed before a rebuild ("" not
--       asked: reply "passed"; "back": never admitted; "served"), 14 the verdict's flags from Go's table of
--       reasons ("s" a suspect, "f" a failed proof), 15-17 the reasons this script finds itself
--       (waitroom.StoreReasons): a prefix over its places, a browser holding another's place, a spent proof,
--       18 ms between arrival marks (waitroom.MarkEvery), 19 the partition count the caller routed the fan by
--       (a different count in the settings answers "moved": the caller's memory of it is stale)
-- Invariants kept: a fan holds at most one live grant or one ticket, never both (a fan with a live grant is
-- answered "admitted" and gets no ticket); a new ticket (seq) is handed out once, in increasing order, never
-- above the ceiling reserved in the record (so a queue rebuilt from the record, whose lastSeq starts at that
-- ceiling, never hands a receipted ticket to someone else), and after opening only once the pre-opening draw
-- has been written, so every pre-opening fan's ticket is smaller than every later fan's. A receipted ticket is
-- given back only while it is still ahead of the cursor (the fan was forgotten, not served or skipped), or,
-- behind it, to a fan skipped as absent within the turn hold (a phone asleep at its turn): that fan goes to the
-- head of the line, which only ever delays the others by one admission each.
-- Bot protection: only a new place (a ticket or a seat in the pre-opening pool) meets the guard; a fan who has
-- one keeps it without another proof. A proof is spent once (SET NX), a prefix takes at most ARGV[6] places, a
-- browser session holds one place whatever identity it shows, and a suspect is refused or given a shadow place
-- (KEYS[12]: a ticket number that looks real and is never in the line).
-- Threshold mode: while the queue is not engaged, the line is empty and both the live admissions and the arrivals
-- over the last minute are under their thresholds, a fan taking a new place (past the guard) is admitted at once,
-- as admit.lua would admit them: so live admissions never pass the threshold through this path. The first join
-- that finds a threshold reached engages the queue (state's "engaged", read by every replica's joins, since they
-- all run here) and takes a ticket like any other; admit.lua disengages it.
-- Reply: {kind, ...}: unknown | moved | restore | closed | sold_out | admitted grantValue | pre opensAt paused |
-- pending | waiting seq cursor rate paused gapEnd gap [floor mark's time, partitioned] | shadow (as waiting) | reserve lastSeq | refused reason | none |
-- passed
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local user = ARGV[1]
local join = ARGV[2] == '1'
local receipted = tonumber(ARGV[3]) or 0

local cfg = redis.call('HMGET', KEYS[1], 'enabled', 'admitPerSecond', 'paused', 'mode', 'activeThreshold',
  'arrivalThreshold', 'tokenTtlSeconds', 'partitions')
if not cfg[1] then
  return {'unknown'} -- no settings cached: never read as "closed" before the record has been asked
end
if (tonumber(cfg[8] or '') or 1) ~= tonumber(ARGV[19]) then
  return {'moved'}
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

local st = redis.call('HMGET', KEYS[3], 'cursor', 'drawn', 'ceiling', 'lastSeq', 'rebuiltCeiling', 'markAt')
if not st[3] then
  return {'restore'} -- the queue's own state is not here (new queue, or lost): rebuild it from the record
end
local cursor = tonumber(st[1] or '0')

-- The answer for a fan in line (or in a shadow place) at ticket s. Behind what a rebuild left ahead of the cursor,
-- it carries the tickets up to the rebuilt ceiling that nobody in line holds, so the fan is told how many fans are
-- ahead, not how many ticket numbers (admit.lua's gap, for the streams). A partitioned queue's answer carries the
-- ticket's floor mark's time too (floor when the caller knows it: a new ticket's).
local function inLine(kind, s, floor)
  local gapEnd, gap = tonumber(st[5] or '') or 0, 0
  if gapEnd > cursor and s > gapEnd then
    gap = gapEnd - cursor - redis.call('ZCOUNT', KEYS[4], '(' .. cursor, gapEnd)
  else
    gapEnd = 0
  end
  if tonumber(ARGV[19]) <= 1 then
    return {kind, s, cursor, rate, paused, gapEnd, gap}
  end
  -- A partitioned queue's fan: the ticket's floor mark too, which orders it among the other lines' fans.
  if not floor then
    floor = redis.call('ZREVRANGEBYSCORE', KEYS[20], s, '-inf', 'LIMIT', 0, 1)[1] or '0'
  end
  return {kind, s, cursor, rate, paused, gapEnd, gap, floor}
end

-- A suspect's shadow place: a ticket number just behind the line's end, moved back there whenever the line comes
-- near it, so it is never reached and looks like any other.
local shadow = redis.call('HGET', KEYS[12], user)
if shadow then
  local fake = tonumber(shadow)
  if fake - cursor < 10 then
    fake = math.max(tonumber(st[4] or '0'), cursor) + 10
    redis.call('HSET', KEYS[12], user, fake)
  end
  return inLine('shadow', fake)
end

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
  return inLine('waiting', tonumber(seq))
end
-- A ticket from before the queue was rebuilt (restore.lua: Redis lost it), within the turn hold of the rebuild.
-- Above the cursor it was rebuilt with, its fan was still in line, and the cursor may pass it now only because
-- the fan was not back yet. At or below it, the fan was served or skipped while away before the loss, which took
-- the skipped list with it: the admission record tells (ARGV[13]). Either way a fan not served gets the ticket
-- back once (KEYS[19]); "rebuilt" is nil when none of this applies, and "passed" says the ticket is at or below.
local rebuilt, passed
if join and receipted > 0 then
  local rb = redis.call('HMGET', KEYS[3], 'rebuiltAt', 'rebuiltCursor', 'rebuiltCeiling')
  if rb[1] and tonumber(rb[1]) >= now - tonumber(ARGV[11]) and receipted <= tonumber(rb[3]) then
    passed = receipted <= tonumber(rb[2])
    rebuilt = function()
      if redis.call('SADD', KEYS[19], user) == 0 then return false end
      redis.call('PEXPIRE', KEYS[19], tonumber(ARGV[11]) + 60000)
      return true
    end
  end
end
if join and receipted > cursor then
  if rebuilt then rebuilt() end -- given back ahead of the cursor: not again behind it
  redis.call('ZADD', KEYS[4], receipted, user)
  return inLine('waiting', receipted)
end
if join and receipted > 0 then
  -- Skipped while away (admit.lua records when): back at the head of the line within the turn hold.
  local skipped = tonumber(redis.call('ZSCORE', KEYS[9], user) or '')
  if skipped and skipped >= now - tonumber(ARGV[11]) then
    redis.call('ZREM', KEYS[9], user)
    redis.call('ZADD', KEYS[4], receipted, user)
    return inLine('waiting', receipted)
  end
  -- Passed by the cursor before the fan was back, and not served: to the head of the line, as a fan skipped
  -- while away is, which delays the others by one admission each.
  if rebuilt and passed and ARGV[13] == '' and redis.call('SISMEMBER', KEYS[19], user) == 0 then
    return {'passed'}
  end
  if rebuilt and (not passed or ARGV[13] == 'back') and rebuilt() then
    redis.call('ZADD', KEYS[4], receipted, user)
    return inLine('waiting', receipted)
  end
  if rebuilt and ARGV[13] == 'served' then
    rebuilt() -- asked once: a served fan's later joins are not sent to the record again
  end
end

-- guard decides whether this join may take a new place: nil when it may (the proof is spent and the place
-- counted), else the reply. Refusals and the figures are counted in KEYS[10].
local function guard()
  local verdict = ARGV[4]
  local suspect, failed = string.find(ARGV[14], 's', 1, true) ~= nil, string.find(ARGV[14], 'f', 1, true) ~= nil
  if verdict ~= 'ok' and not suspect then
    redis.call('HINCRBY', KEYS[10], 'refused:' .. verdict, 1)
    if failed then redis.call('HINCRBY', KEYS[10], 'failed', 1) end
    return {'refused', verdict}
  end
  local prefix = ARGV[5]
  local browser = ARGV[9]
  -- The place is counted against the prefix up front, in one command rather than a read now and a write at the
  -- end; each refusal below takes it back (a rarer path than an honest fan's place).
  local counted = not suspect and prefix ~= ''
  local function uncount()
    if counted then redis.call('ZINCRBY', KEYS[11], -1, prefix) end
  end
  if counted and tonumber(redis.call('ZINCRBY', KEYS[11], 1, prefix)) > tonumber(ARGV[6]) then
    verdict, suspect = ARGV[15], true
  end
  if not suspect and browser ~= '' then
    -- Checked before the proof is spent: an honest fan refused here keeps their proof for another try.
    local other = redis.call('HGET', KEYS[13], browser)
    if other and other ~= user and (redis.call('ZSCORE', KEYS[4], other) or redis.call('HEXISTS', KEYS[7], other) == 1
        or redis.call('SISMEMBER', KEYS[5], other) == 1) then
      redis.call('HINCRBY', KEYS[10], 'refused:' .. ARGV[16], 1)
      uncount()
      return {'refused', ARGV[16]}
    end
  end
  if not suspect and ARGV[8] ~= '0' and not redis.call('SET', KEYS[14], user, 'NX', 'PX', ARGV[8]) then
    verdict, suspect, failed = ARGV[17], true, true
  end
  if suspect and failed then
    redis.call('HINCRBY', KEYS[10], 'failed', 1)
  end
  if suspect then
    uncount()
    redis.call('HINCRBY', KEYS[10], 'refused:' .. verdict, 1)
    if ARGV[7] == '1' then
      local fake = math.max(tonumber(st[4] or '0'), cursor) + 10
      redis.call('HSET', KEYS[12], user, fake)
      redis.call('HINCRBY', KEYS[10], 'shadowed', 1)
      return inLine('shadow', fake)
    end
    return {'refused', verdict}
  end
  if browser ~= '' then redis.call('HSET', KEYS[13], browser, user) end
  -- Every new place costs the commands below, so they are few: the solved count rides on the arrivals' write,
  -- and the list of solve times (the last 1000 make the median) is trimmed once per hundred pushes.
  if ARGV[8] ~= '0' and ARGV[10] ~= '-1' and redis.call('LPUSH', KEYS[18], ARGV[10]) > 1100 then
    redis.call('LTRIM', KEYS[18], 0, 999)
  end
  -- The show's new places: exactly over the last minute (threshold mode), and as a count decaying with a 60 s
  -- half-life (the challenge's load factor), in one read and one write with the solved count.
  arrivals(KEYS[10], now, 1, {'arr', 'arrAt', 'solved'}, function(v)
    local a, at = tonumber(v[1] or '0'), tonumber(v[2] or '0')
    if at > 0 then a = a * math.pow(2, -(now - at) / 60000) end
    local solved = tonumber(v[3] or '0')
    if ARGV[8] ~= '0' then solved = solved + 1 end
    return {'arr', tostring(a + 1), 'arrAt', now, 'solved', solved}
  end)
  return nil
end

local opens = tonumber(info[4] or '') or 0
if now < opens then
  if join and redis.call('SISMEMBER', KEYS[5], user) == 0 then
    local refused = guard()
    if refused then return refused end
    redis.call('SADD', KEYS[5], user)
  end
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
if cfg[4] == 'threshold' and redis.call('HGET', KEYS[3], 'engaged') ~= '1' then
  local active = redis.call('ZCOUNT', KEYS[8], '(' .. now, '+inf')
  local arrived = arrivals(KEYS[10], now, 0, {})
  local arrivalLimit = tonumber(cfg[6] or '') or 0
  if redis.call('ZCARD', KEYS[4]) == 0 and active < (tonumber(cfg[5] or '') or 0)
      and (arrivalLimit == 0 or arrived < arrivalLimit) then
    local refused = guard()
    if refused then return refused end
    local iat = now - now % 1000
    local exp = iat + (tonumber(cfg[7] or '') or 600) * 1000
    -- Numbered by the show's running count, as admit.lua's jtis: unique whichever run made it.
    local jti = ARGV[12] .. '.' .. redis.call('HINCRBY', KEYS[3], 'admittedTotal', 1)
    local gv = jti .. '|' .. exp .. '|' .. iat
    redis.call('ZADD', KEYS[8], exp, jti)
    redis.call('ZADD', KEYS[15], exp, jti)
    redis.call('HSET', KEYS[16], jti, user)
    redis.call('HSET', KEYS[7], user, gv)
    -- Unrecorded until the caller has recorded it and stored its token (tokens.lua), scored so that the durable
    -- cursor stays where it is.
    redis.call('ZADD', KEYS[17], cursor + 1, jti)
    redis.call('ZREM', KEYS[6], user) -- heartbeats are for fans in line
    return {'admitted', gv}
  end
  redis.call('HSET', KEYS[3], 'engaged', '1', 'engagedAt', now)
  redis.call('HDEL', KEYS[3], 'underSince')
end
-- Taken off the queue earlier (admitted and done, or skipped as gone): a fresh ticket at the back.
local last = tonumber(st[4] or '0')
if last + 1 > tonumber(st[3]) then
  return {'reserve', last}
end
local refused = guard()
if refused then return refused end
local s = redis.call('HINCRBY', KEYS[3], 'lastSeq', 1)
redis.call('ZADD', KEYS[4], s, user)
-- An arrival mark when the last is MarkEvery old: what a partitioned queue orders its lines' tickets by.
local floor = st[6] or '0'
if now - (tonumber(st[6] or '') or 0) >= tonumber(ARGV[18]) then
  redis.call('ZADD', KEYS[20], s, now)
  redis.call('HSET', KEYS[3], 'markAt', now)
  floor = now
end
return inLine('waiting', s, floor)
