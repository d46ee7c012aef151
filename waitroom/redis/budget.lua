-- The admission budget of a partitioned queue's tick (lines.go): how many fans the show's lines may admit now,
-- from the show's one rate and one active cap. The caller holds the show's tick lock and has found the show open.
-- KEYS: 1 config, 2 state (the show's own: partition 0's)
-- ARGV: 1 the active admissions over all lines
-- As admit.lua's own budget: credit accrues from the last tick's Redis time, at most a second of it, and credit
-- not spent is not banked beyond the fraction of one fan (nor at all when the cap held the tick back).
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cfg = redis.call('HMGET', KEYS[1], 'admitPerSecond', 'maxActive', 'paused')
if cfg[3] == '1' then
  redis.call('HSET', KEYS[2], 'lastTick', now, 'carry', 0)
  return 0
end
local rate = tonumber(cfg[1] or '') or 10
local maxActive = tonumber(cfg[2] or '') or 200
local st = redis.call('HMGET', KEYS[2], 'lastTick', 'carry')
local elapsed = 0
if st[1] then elapsed = math.min(math.max(now - tonumber(st[1]), 0), 1000) end
local credit = (tonumber(st[2] or '') or 0) + rate * elapsed / 1000
local want = math.floor(credit)
local n = math.max(0, math.min(want, maxActive - tonumber(ARGV[1])))
local carry = 0
if n == want then carry = credit - want end
redis.call('HSET', KEYS[2], 'lastTick', now, 'carry', tostring(carry))
return n
