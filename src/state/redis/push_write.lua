-- A push subscription's change, or a queue's delivery pause, with its audit line: a record's
-- change only over the revision it read, and each only where its queue's trail has room.
-- KEYS: 1 records (hash <queue>/<name> -> JSON), 2 revisions (hash <queue>/<name> -> revision), 3 version,
--       4 the queue's audit trail (list, newest first, "<seq> <at ms> <JSON>"), 5 audit seq,
--       6 pauses (hash <queue> -> JSON)
-- ARGV: 1 <queue>/<name> (a pause: <queue>), 2 expected revision, 3 new revision ("0": remove),
--       4 record (or pause) JSON, 5 audit line JSON, 6 lines a trail keeps, 7 the line's time
--       (ms), 8 how long a line is kept at least (ms), 9 "1" when the change is written whatever
--       the trail holds, 10 what is written: "record", "pause" or "resume"
-- Answers 1 written, 0 another change came first, or minus the oldest line's time (ms) when the
-- trail holds its lines, all younger than ARGV[8] (nothing written).
local function written_at(entry)
  return tonumber(string.match(entry, '^%d+ (%d+) '))
end
local kind = ARGV[10]
if kind == 'record' then
  local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
  if current ~= tonumber(ARGV[2]) then
    return 0
  end
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
if kind == 'pause' then
  redis.call('HSET', KEYS[6], ARGV[1], ARGV[4])
elseif kind == 'resume' then
  redis.call('HDEL', KEYS[6], ARGV[1])
elseif ARGV[3] == '0' then
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
