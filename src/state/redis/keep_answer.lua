-- Keeps an attempt's answer unless one is kept already and not expired (on the gateway's clock).
-- KEYS[1]: the answer; ARGV: now (ms), "<expiry ms>:<answer>", the key's ttl (ms).
local kept = redis.call('GET', KEYS[1])
if kept then
  local expires = tonumber(string.match(kept, '^(%d+):'))
  if expires and expires > tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1
