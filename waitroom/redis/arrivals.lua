-- arrivals.lua is put in front of join.lua and admit.lua (the Go that loads them joins the texts): one copy of the
-- show's count of arrivals (new places and admissions at once) over the last minute, for threshold mode and the
-- console.
-- The count is a ring of 60 one-second buckets (a:0..a:59), with the running total (a:total) and the second the
-- ring was last advanced (a:last), kept in the show's bot stats hash: a join that takes a new place writes its
-- figures there anyway, so its arrival costs no command of its own (a read and a write for both). Advancing costs
-- one read and one delete for all the seconds that passed, not a scan of the minute.

-- arrivals adds add arrivals at nowMs to the ring in hash key and returns the count over the last minute. read
-- names further fields of the same hash to fetch in the same HMGET; write, when given, is called with their
-- values and returns further field-value pairs to store in the same HSET. A count alone (add 0, no write) changes
-- nothing: the ring is advanced by the next arrival.
local function arrivals(key, nowMs, add, read, write)
  local sec = math.floor(nowMs / 1000)
  local bucket = 'a:' .. (sec % 60)
  local fields = {'a:last', 'a:total', bucket}
  for i = 1, #read do fields[#fields + 1] = read[i] end
  local h = redis.call('HMGET', key, unpack(fields))
  local last, total, cur = tonumber(h[1] or ''), tonumber(h[2] or '') or 0, tonumber(h[3] or '') or 0
  local stale
  if last and sec - last >= 60 then
    -- Every bucket is over a minute old. (The list of all 60 is built here only: building it on every call, as a
    -- constant, cost a join as much as the rest of its script.)
    stale, total, cur = {}, 0, 0
    for i = 0, 59 do stale[i + 1] = 'a:' .. i end
  elseif last and sec > last then
    -- The buckets of the seconds since the last advance (this one's included) hold a minute-old count.
    stale = {}
    for s = last + 1, sec do stale[#stale + 1] = 'a:' .. (s % 60) end
    local old = redis.call('HMGET', key, unpack(stale))
    for i = 1, #old do total = total - (tonumber(old[i] or '') or 0) end
    cur = 0
  end
  if add == 0 and not write then
    return total
  end
  if stale then redis.call('HDEL', key, unpack(stale)) end
  local set = {}
  if add > 0 then set = {'a:last', sec, 'a:total', total + add, bucket, cur + add} end
  if stale and add == 0 then set = {'a:last', sec, 'a:total', total} end
  if write then
    local vals = {}
    for i = 1, #read do vals[i] = h[3 + i] end
    local more = write(vals)
    for i = 1, #more do set[#set + 1] = more[i] end
  end
  if #set > 0 then redis.call('HSET', key, unpack(set)) end
  return total + add
end
