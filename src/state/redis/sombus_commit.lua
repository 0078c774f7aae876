-- One change of the sombus credential store, made only if nothing changed since it was read.
-- KEYS[1] the store's version, KEYS[2] the connections (a hash by client id), KEYS[3] the audit
-- log (a stream whose entry ids are 0-<seq>).
-- ARGV[1] the version the change was read at, ARGV[2] the channel changed client ids are
-- published on, ARGV[3] the audit line's stream id ('' for none), ARGV[4] the line, ARGV[5] how
-- many connections are set, then that many (client id, record) pairs, then client ids removed.
-- Answers 1 when made, 0 when the store changed meanwhile (read again and retry).
local version = tonumber(redis.call('GET', KEYS[1]) or '0')
if version ~= tonumber(ARGV[1]) then
  return 0
end
-- The line first: a script's earlier writes stay when a later command fails, and the line is
-- the only command that can (an id that is not past the log's last).
if ARGV[3] ~= '' then
  redis.call('XADD', KEYS[3], ARGV[3], 'line', ARGV[4])
end
local changed = {}
local at = 6
for _ = 1, tonumber(ARGV[5]) do
  redis.call('HSET', KEYS[2], ARGV[at], ARGV[at + 1])
  changed[#changed + 1] = ARGV[at]
  at = at + 2
end
for i = at, #ARGV do
  redis.call('HDEL', KEYS[2], ARGV[i])
  changed[#changed + 1] = ARGV[i]
end
redis.call('INCR', KEYS[1])
for _, client_id in ipairs(changed) do
  redis.call('PUBLISH', ARGV[2], client_id)
end
return 1
