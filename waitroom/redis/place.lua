-- Writes one chunk of the pre-opening draw, or finishes it.
-- KEYS: 1 state, 2 wait, 3 pre
-- ARGV: 1 "chunk" first-index user... | "finish" count digest drawCount (the whole draw's, when a partitioned
--       queue's line holds only its share of it; absent: count)
-- Invariants kept: once the draw is marked done, admissions pop from the queue, so no chunk may be written after
-- that (a late duplicate drawer would put popped fans back); both steps check the flag in the same script.
-- Tickets follow any handed out before (lastSeq, normally 0; joins wait while the draw is pending, so it does
-- not move between chunks): the i-th drawn fan gets lastSeq + i, and no two fans ever share a ticket.
if redis.call('HGET', KEYS[1], 'drawn') == '1' then
  return 0
end
if ARGV[1] == 'chunk' then
  -- One ZADD per chunk (score-member pairs, unpacked: chunks stay under Lua's unpack limit).
  local seq = tonumber(redis.call('HGET', KEYS[1], 'lastSeq') or '0') + tonumber(ARGV[2])
  local args = {}
  for i = 3, #ARGV do
    args[#args + 1] = seq
    args[#args + 1] = ARGV[i]
    seq = seq + 1
  end
  if #args > 0 then
    redis.call('ZADD', KEYS[2], unpack(args))
  end
  return 1
end
local n = tonumber(ARGV[2])
local last = tonumber(redis.call('HGET', KEYS[1], 'lastSeq') or '0') + n
redis.call('HSET', KEYS[1], 'drawn', '1', 'lastSeq', last, 'drawCount', ARGV[4] or n, 'drawDigest', ARGV[3])
-- The pool is kept a week for audits (it can hold a million ids), then it goes.
redis.call('PEXPIRE', KEYS[3], 7 * 24 * 3600 * 1000)
return 1
