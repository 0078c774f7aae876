-- A request's limits, checked in order in one call: each admitted one is counted, and the first
-- that refuses ends the check (the ones after it are not counted).
-- KEYS: one per limit. ARGV: now (us), then four per limit: its kind and three figures:
--   "rate":   emission interval (us), burst, unused   (KEYS: the theoretical arrival time, us)
--   "window": amount, limit per minute, unused        (KEYS: a hash of counts by second)
--   "daily":  amount, limit per day, wait until the day rolls over (ms)  (KEYS: today's count)
-- Answers one figure per limit checked: -1 when admitted, else the wait (us).
local now_us = tonumber(ARGV[1])
local now_ms = math.floor(now_us / 1000)

local function rate(key, interval, burst)
  local arrival = tonumber(redis.call('GET', key) or '0')
  if arrival < now_us then arrival = now_us end
  local allowed_at = arrival + interval - burst * interval
  if now_us < allowed_at then return allowed_at - now_us end
  local next_arrival = arrival + interval
  redis.call('SET', key, string.format('%d', next_arrival), 'PX',
    math.floor((next_arrival - now_us) / 1000) + 1000)
  return -1
end

local function window(key, amount, limit)
  local now = math.floor(now_ms / 1000)
  local fields = redis.call('HGETALL', key)
  local seconds = {}
  local counted = 0
  for i = 1, #fields, 2 do
    local second = tonumber(fields[i])
    local count = tonumber(fields[i + 1])
    if second + 60 <= now then
      redis.call('HDEL', key, fields[i])
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
    return wait * 1000
  end
  redis.call('HINCRBY', key, tostring(now), amount)
  redis.call('PEXPIRE', key, 61000)
  return -1
end

local function daily(key, amount, limit, until_tomorrow)
  local count = tonumber(redis.call('GET', key) or '0')
  if count + amount > limit then return until_tomorrow * 1000 end
  redis.call('INCRBY', key, amount)
  -- An hour past the day's end, for clocks a little apart.
  redis.call('PEXPIRE', key, until_tomorrow + 3600000)
  return -1
end

local answers = {}
for i = 1, #KEYS do
  local first = 2 + (i - 1) * 4
  local kind = ARGV[first]
  local a, b, c = tonumber(ARGV[first + 1]), tonumber(ARGV[first + 2]), tonumber(ARGV[first + 3])
  local answer
  if kind == 'rate' then
    answer = rate(KEYS[i], a, b)
  elseif kind == 'window' then
    answer = window(KEYS[i], a, b)
  elseif kind == 'daily' then
    answer = daily(KEYS[i], a, b, c)
  else
    return redis.error_reply('unknown limit kind')
  end
  answers[#answers + 1] = answer
  if answer >= 0 then break end
end
return answers
