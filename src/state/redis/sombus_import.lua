-- A directory's whole sombus credential store taken in, only into a store that holds nothing.
-- KEYS[1] the store's version, KEYS[2] the connections (a hash by client id), KEYS[3] the audit
-- log (a stream whose entry ids are 0-<place>).
-- ARGV[1] the channel changed client ids are published on, ARGV[2] how many connections, then
-- that many (client id, record) pairs, then the audit log's lines in order.
-- Answers 1 when taken in, 0 when the store already held something (nothing is written).
if redis.call('EXISTS', KEYS[1], KEYS[2], KEYS[3]) > 0 then
  return 0
end
local at = 3
local changed = {}
for _ = 1, tonumber(ARGV[2]) do
  redis.call('HSET', KEYS[2], ARGV[at], ARGV[at + 1])
  changed[#changed + 1] = ARGV[at]
  at = at + 2
end
local place = 0
for i = at, #ARGV do
  place = place + 1
  redis.call('XADD', KEYS[3], '0-' .. place, 'line', ARGV[i])
end
redis.call('SET', KEYS[1], 1)
for _, client_id in ipairs(changed) do
  redis.call('PUBLISH', ARGV[1], client_id)
end
return 1
