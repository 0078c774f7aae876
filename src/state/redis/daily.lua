-- A count for one UTC day: KEYS[1] is the key's count for that day.
-- ARGV: amount, limit, the wait (ms) until the day rolls over, the count's ttl (ms).
-- Answers -1 when admitted (and counted), else the wait.
local count = tonumber(redis.call('GET', KEYS[1]) or '0')
if count + tonumber(ARGV[1]) > tonumber(ARGV[2]) then return tonumber(ARGV[3]) end
redis.call('INCRBY', KEYS[1], ARGV[1])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return -1
