-- Stores signed admission tokens beside their grants.
-- KEYS: 1 grants
-- ARGV: triples userId, jti, token
-- Invariant kept: a token is stored only on the grant it was signed for (the grant may have expired and the fan
-- been granted again meanwhile), and never replaces one already stored, so every replica serves one token.
local n = 0
for i = 1, #ARGV, 3 do
  local user, jti, tok = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local g = redis.call('HGET', KEYS[1], user)
  if g and string.sub(g, 1, #jti + 1) == jti .. '|' then
    local _, seps = string.gsub(g, '|', '')
    if seps == 2 then
      redis.call('HSET', KEYS[1], user, g .. '|' .. tok)
      n = n + 1
    end
  end
end
return n
