-- An exact count over the rolling minute: KEYS[1] is a hash of counts by second.
-- ARGV: now (ms), amount, limit. Answers -1 when admitted (and counted), else the wait (ms)
-- until enough has left the window.
local now_ms = tonumber(ARGV[1])
local amount = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local now = math.floor(now_ms / 1000)
local fields = redis.call('HGETALL', KEYS[1])
local seconds = {}
local counted = 0
for i = 1, #fields, 2 do
  local second = tonumber(fields[i])
  local count = tonumber(fields[i + 1])
  if second + 60 <= now then
    redis.call('HDEL', KEYS[1], fields[i])
  else
    seconds[#seconds + 1] = { second, count }
    counted = counted + count
  end
end
local wanted = counted + amount
if wanted > limit then
  table.sort(seconds, function(a, b) return a[1] < b[1] end)
  local excess = wanted - limit
  local free_at = now + 60
  for _, counted_second in ipairs(seconds) do
    if excess <= counted_second[2] then
      free_at = counted_second[1] + 60
      break
    end
    excess = excess - counted_second[2]
  end
  local wait = free_at * 1000 - now_ms
  if wait < 1 then wait = 1 end
  return wait
end
redis.call('HINCRBY', KEYS[1], tostring(now), amount)
redis.call('PEXPIRE', KEYS[1], 61000)
return -1
