-- The delivery ledger's operations on one request's deliveries of one queue, in one call.
-- KEYS[1]: the queue's purge generation; KEYS[2..]: one entry per delivery.
-- ARGV: operation, entry ttl (ms), ended entry ttl (ms), keep ended ("1" or "0"), then per
-- delivery its id (decimal) and, for "record", the message's receive count.
-- An entry is "<delivery id> <state> <generation> <receive count>", state A (active) or K
-- (acknowledged: claimed, and kept only as long as an ended delivery is, unless an abort makes
-- it active again) or E (ended: an unknown delivery acknowledged under "keep ended"). Answers, for "standings" and "begin", one code per
-- delivery: 0 unknown, 1 current, 2 stale.
local op = ARGV[1]
local ttl = ARGV[2]
local ended_ttl = ARGV[3]
local keep_ended = ARGV[4] == '1'
local generation = redis.call('GET', KEYS[1]) or '0'
local per_delivery = 1
if op == 'record' then per_delivery = 2 end

local function parse(value)
  local id, state, entry_generation, count = string.match(value, '^(%d+) (%a) (%d+) (%d+)$')
  return id, state, entry_generation, tonumber(count)
end

local function entry(id, state, entry_generation, count)
  return id .. ' ' .. state .. ' ' .. entry_generation .. ' ' .. count
end

local function standing(value, id)
  if not value then return 0 end
  local entry_id, state, entry_generation = parse(value)
  if entry_id == id and state == 'A' and entry_generation == generation then return 1 end
  return 2
end

local answers = {}
for i = 2, #KEYS do
  local key = KEYS[i]
  local first = 5 + (i - 2) * per_delivery
  local id = ARGV[first]
  local value = redis.call('GET', key)
  if op == 'record' then
    local count = tonumber(ARGV[first + 1])
    local write = true
    if value then
      local entry_id, _, entry_generation, entry_count = parse(value)
      -- Within one purge generation, a later delivery (by receive count) or this same one
      -- (acknowledged or ended since) is never replaced by a late or replayed record.
      if entry_generation == generation and (entry_id == id or entry_count > count) then
        write = false
      end
    end
    if write then
      redis.call('SET', key, entry(id, 'A', generation, count), 'PX', ttl)
    end
  elseif op == 'standings' then
    answers[#answers + 1] = standing(value, id)
  elseif op == 'begin' then
    local answer = standing(value, id)
    if answer == 1 then
      -- Claimed, and kept as an ended delivery is: a claim answers stale as an ended one does,
      -- so the acknowledgement needs no second write once the backend acted; an abort makes
      -- it current again.
      local _, _, _, count = parse(value)
      local kept_for = ended_ttl
      if keep_ended then kept_for = ttl end
      redis.call('SET', key, entry(id, 'K', generation, count), 'PX', kept_for)
    end
    answers[#answers + 1] = answer
  elseif op == 'end' then
    -- Only where unknown deliveries act on the backend (keep ended): an acknowledged one the
    -- ledger did not know is kept as ended, so that its handle answers stale from now on.
    local entry_id, count = nil, 0
    if value then
      local parsed_id, _, _, parsed_count = parse(value)
      entry_id, count = parsed_id, parsed_count
    end
    if not (value and entry_id ~= id) then
      redis.call('SET', key, entry(id, 'E', generation, count), 'PX', ttl)
    end
  elseif op == 'abort' then
    if value then
      local entry_id, state, entry_generation, count = parse(value)
      if entry_id == id and state == 'K' then
        redis.call('SET', key, entry(id, 'A', entry_generation, count), 'PX', ttl)
      end
    end
  else
    return redis.error_reply('unknown ledger operation')
  end
end
return answers
