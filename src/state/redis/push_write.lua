-- A push subscription's change with its audit line, only over the revision it read.
-- KEYS: 1 records (hash name -> JSON), 2 revisions (hash name -> revision), 3 version,
--       4 audit (list, newest first, "<seq> <JSON>"), 5 audit seq
-- ARGV: 1 name, 2 expected revision, 3 new revision ("0": remove), 4 record JSON,
--       5 audit line JSON, 6 audit lines kept
local current = tonumber(redis.call('HGET', KEYS[2], ARGV[1]) or '0')
if current ~= tonumber(ARGV[2]) then
  return 0
end
if ARGV[3] == '0' then
  redis.call('HDEL', KEYS[1], ARGV[1])
  redis.call('HDEL', KEYS[2], ARGV[1])
else
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[4])
  redis.call('HSET', KEYS[2], ARGV[1], ARGV[3])
end
local seq = redis.call('INCR', KEYS[5])
redis.call('LPUSH', KEYS[4], seq .. ' ' .. ARGV[5])
redis.call('LTRIM', KEYS[4], 0, tonumber(ARGV[6]) - 1)
redis.call('INCR', KEYS[3])
return 1
