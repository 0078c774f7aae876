-- A request rate with bursts (GCRA): KEYS[1] holds the theoretical arrival time (us).
-- ARGV: now (us), emission interval (us), burst. Answers -1 when admitted, else the wait (us).
local now = tonumber(ARGV[1])
local interval = tonumber(ARGV[2])
local burst = tonumber(ARGV[3])
local arrival = tonumber(redis.call('GET', KEYS[1]) or '0')
if arrival < now then arrival = now end
local allowed_at = arrival + interval - burst * interval
if now < allowed_at then return allowed_at - now end
local next_arrival = arrival + interval
redis.call('SET', KEYS[1], string.format('%d', next_arrival), 'PX',
  math.floor((next_arrival - now) / 1000) + 1000)
return -1
