-- One step of a sliding-window log of distinct members: the Lua twin of
-- spraydetect.Windows (Admit, Add, Remove, Peek) and authguard.Apply.
--
-- KEYS[1]  the log: a sorted set, member -> last recorded ms
-- ARGV     action, member, bypass ("1"), now_ms ("" = Redis TIME),
--          expire ("1" = set PEXPIRE), then window_ms, limit pairs
-- returns  {added 0|1, 0, over 0|1, count}
if redis.replicate_commands then redis.replicate_commands() end
local key, action, member, bypass = KEYS[1], ARGV[1], ARGV[2], ARGV[3] == "1"
local now
if ARGV[4] ~= "" then
  now = tonumber(ARGV[4])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local expire = ARGV[5] == "1"
local windows, longest, cap = {}, 0, 0
for i = 6, #ARGV, 2 do
  local len, limit = tonumber(ARGV[i]), tonumber(ARGV[i + 1])
  windows[#windows + 1] = {len, limit}
  if len > longest then longest = len end
  if limit > cap then cap = limit end
end
cap = cap + 1

local function ms(x) return string.format("%d", x) end

-- Current: drop entries at or before the longest window's start.
redis.call('ZREMRANGEBYSCORE', key, '-inf', ms(now - longest))

-- over: would recording member now push a window past its limit?
local function over()
  local cur = redis.call('ZSCORE', key, member)
  for _, w in ipairs(windows) do
    local cutoff = now - w[1]
    local c = redis.call('ZCOUNT', key, '(' .. ms(cutoff), '+inf')
    if cur and tonumber(cur) > cutoff then c = c - 1 end
    if c + 1 > w[2] then return true end
  end
  return false
end

local added, isover = 0, false
if action == "admit" or action == "add" then
  isover = over()
  local exists = redis.call('ZSCORE', key, member)
  -- admit leaves an existing member as it is; add refreshes it
  if (action == "add" or not isover or bypass) and not (action == "admit" and exists) then
    if not exists then added = 1 end
    redis.call('ZADD', key, ms(now), member)
    local card = redis.call('ZCARD', key)
    if card > cap then redis.call('ZREMRANGEBYRANK', key, 0, card - cap - 1) end
  end
elseif action == "remove" then
  redis.call('ZREM', key, member)
  isover = over()
elseif action == "peek" then
  isover = over()
else
  return redis.error_reply("log.lua: unknown action " .. action)
end

local count = redis.call('ZCARD', key)
if count > 0 then
  local newest = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  local ttl = tonumber(newest[2]) + longest - now
  if ttl <= 0 then
    redis.call('DEL', key)
  elseif expire then
    redis.call('PEXPIRE', key, ms(ttl))
  end
end
local o = 0
if isover then o = 1 end
return {added, 0, o, count}
