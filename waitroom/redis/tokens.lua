-- Stores signed admission tokens beside their grants, once the caller has recorded the grants in PostgreSQL.
-- KEYS: 1 grants, 2 unrecorded (jti -> ticket, see admit.lua), 3 state
-- ARGV: triples userId, jti, token
-- Returns the durable cursor now (admit.lua's, with these grants recorded): the caller may record it.
-- Invariants kept: a token is stored only on the grant it was signed for (the grant may have expired and the fan
-- been granted again meanwhile), and never replaces one already stored, so every replica serves one token; the
-- grant leaves the unrecorded set, since callers store a token only after recording its grant.
for i = 1, #ARGV, 3 do
  local user, jti, tok = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local g = redis.call('HGET', KEYS[1], user)
  if g and string.sub(g, 1, #jti + 1) == jti .. '|' then
    local _, seps = string.gsub(g, '|', '')
    if seps == 2 then
      redis.call('HSET', KEYS[1], user, g .. '|' .. tok)
    end
  end
  redis.call('ZREM', KEYS[2], jti)
end
local durable = tonumber(redis.call('HGET', KEYS[3], 'cursor') or '0') or 0
local low = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
if #low == 2 then durable = math.min(durable, tonumber(low[2]) - 1) end
return durable
