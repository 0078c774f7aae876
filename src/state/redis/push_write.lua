-- A push subscription's change with its audit line, only over the revision it read, and only
-- where its queue's trail has room.
-- KEYS: 1 records (hash <queue>/<name> -> JSON), 2 revisions (hash <queue>/<name> -> revision), 3 version,
--       4 the queue's audit trail (list, newest first, "<seq> <at ms> <JSON>"), 5 audit seq
-- ARGV: 1 <queue>/<name>, 2 expected revision, 3 new revision ("0": remove), 4 record JSON,
--       5 audit line JSON, 6 lines a trail keeps, 7 the line's time (ms), 8 how long a line is
--       kept at least (ms), 9 "1" when the change is written whatever the trail holds
-- Answers 1 written, 0 another change came first, or minus the oldest line's time (ms) when the
-- trail holds its lines, all younger than ARGV[8] (nothing written).
local function written_at(entry)
  return tonumber(string.match(entry, '^%d+ (%d+) '))
end
local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if current ~= tonumber(ARGV[2]) then
  return 0
end
local kept = tonumber(ARGV[6])
local now = tonumber(ARGV[7])
local at_least = tonumber(ARGV[8])
if ARGV[9] ~= '1' and redis.call('LLEN', KEYS[4]) >= kept then
  local oldest = written_at(redis.call('LINDEX', KEYS[4], -1))
  if oldest and now - oldest < at_least then
    return -oldest
  end
end
if ARGV[3] == '0' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
local seq = redis.call('INCR', KEYS[5])
redis.call('LPUSH', KEYS[4], seq .. ' ' .. ARGV[7] .. ' ' .. ARGV[5])
while redis.call('LLEN', KEYS[4]) > kept do
  local oldest = written_at(redis.call('LINDEX', KEYS[4], -1))
  if oldest and now - oldest < at_least then
    break
  end
  redis.call('RPOP', KEYS[4])
end
redis.call('INCR', KEYS[3])
return 1
