-- One step of a sliding-window log of distinct members: the Lua twin of
-- spraydetect.Windows (Admit, Add, Remove, Peek) and authguard.Apply.
--
-- KEYS[1]  the log: a sorted set, member -> last recorded ms
-- ARGV     action, member, bypass ("1"), now_ms ("" = Redis TIME),
--          expire ("1" = set PEXPIRE), then window_ms, limit pairs
-- returns  {added 0|1, 0, over 0|1, count}
--
-- Few Redis calls, because each costs about as much as the Lua around it:
-- the trim leaves only the longest window's entries, so its count is the
-- set's size, and only shorter windows need a ZCOUNT. A log only grows by
-- an entry at now, so a write sets the expiry to the longest window, and a
-- removal leaves an expiry that is still long enough.
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
local card = redis.call('ZCARD', key)
local cur = false
if card > 0 then cur = redis.call('ZSCORE', key, member) end

-- over: would recording member now push a window past its limit?
local function over()
  for _, w in ipairs(windows) do
    local cutoff = now - w[1]
    local c = card
    if w[1] < longest and card > 0 then c = redis.call('ZCOUNT', key, '(' .. ms(cutoff), '+inf') end
    if cur and tonumber(cur) > cutoff then c = c - 1 end
    if c + 1 > w[2] then return true end
  end
  return false
end

local added, isover = 0, false
if action == "admit" or action == "add" then
  isover = over()
  -- admit leaves an existing member as it is; add refreshes it
  if (action == "add" or not isover or bypass) and not (action == "admit" and cur) then
    redis.call('ZADD', key, ms(now), member)
    if not cur then
      added, card = 1, card + 1
      if card > cap then
        redis.call('ZREMRANGEBYRANK', key, 0, card - cap - 1)
        card = cap
      end
    end
    if expire then redis.call('PEXPIRE', key, ms(longest)) end
  end
elseif action == "remove" then
  if cur then
    redis.call('ZREM', key, member)
    card, cur = card - 1, false
  end
  isover = over()
elseif action == "peek" then
  isover = over()
else
  return redis.error_reply("log.lua: unknown action " .. action)
end

local o = 0
if isover then o = 1 end
return {added, 0, o, card}
