-- One step of a sliding-window log of distinct members: the Lua twin of
-- spraydetect.Windows (Admit, Add, Remove, Peek, Renew) and authguard.Apply.
--
-- KEYS[1]  the log: a sorted set, member -> last recorded ms
-- ARGV     action, member, bypass ("1"), now (ms, "" = Redis TIME), expire
--          ("1" = set PEXPIRE): the order of encode's logArgs; then
--          window_ms, limit pairs
-- returns  {added 0|1, 0, over 0|1, count}
--
-- Few Redis calls, because each costs about as much as the Lua around it:
-- the trim leaves only the longest window's entries, so its count is the
-- set's size, and only shorter windows need a ZCOUNT. A log only grows by
-- an entry at now, so a write sets the expiry to the longest window, and a
-- removal leaves an expiry that is still long enough.
local key, A, o, nargs = KEYS[1], ARGV, 0, #ARGV
if A[4] == "" then A[4] = redisNow() end
--- op body: check.lua runs what follows as op_l(key, A, o, nargs), its arguments A[o + 1 ... o + nargs]
local action, member, bypass, now, expire = unpack(A, o + 1, o + 5)
local windows, last = o + 6, o + nargs - 1 -- the window_ms, limit pairs: A[windows ... last + 1]
if action ~= "admit" and action ~= "add" and action ~= "remove" and action ~= "peek" and action ~= "renew" then
  return redis.error_reply("log.lua: unknown action " .. action)
end
-- now and the longest window also as the strings they came in, since a
-- string.format costs as much as a Redis call's dispatch. (A shape, shape.go,
-- writes the windows as Lua numbers, which tonumber returns as they are.)
local nows = now
now, bypass, expire = tonumber(now), bypass == "1", expire == "1"
local longest, longests, cap = 0, "0", 0
for i = windows, last, 2 do
  local len, limit = tonumber(A[i]), tonumber(A[i + 1])
  if len > longest then longest, longests = len, A[i] end
  if limit > cap then cap = limit end
end
cap = cap + 1

-- Current: the entries after the longest window's start. A peek counts
-- them and writes nothing; the other actions drop those at or before it
-- first (ZREMRANGEBYSCORE answers how many went), skipped for a log that
-- does not exist. An entry a peek leaves behind is at or before every
-- window's cutoff, so it counts nowhere below.
local card
local start = string.format("%d", now - longest)
if action == "peek" then
  card = redis.call('ZCOUNT', key, '(' .. start, '+inf')
else
  card = redis.call('ZCARD', key)
  if card > 0 then card = card - redis.call('ZREMRANGEBYSCORE', key, '-inf', start) end
end
local cur = false
if card > 0 then
  cur = redis.call('ZSCORE', key, member)
  if cur then cur = tonumber(cur) end
end

if action == "remove" and cur then
  redis.call('ZREM', key, member)
  card, cur = card - 1, false
end

-- over: would recording member now push a window past its limit?
local isover = false
for i = windows, last, 2 do
  local len = tonumber(A[i])
  local cutoff = now - len
  local c = card
  if len < longest and card > 0 then c = redis.call('ZCOUNT', key, '(' .. string.format("%d", cutoff), '+inf') end
  if cur and cur > cutoff then c = c - 1 end
  if c + 1 > tonumber(A[i + 1]) then
    isover = true
    break
  end
end

local added = 0
if action == "admit" or action == "add" or action == "renew" then
  -- admit leaves an existing member as it is; add and renew refresh it
  -- (renew, like admit, takes no new member past a limit and no bypass)
  if (action == "add" or not isover or (bypass and action == "admit")) and not (action == "admit" and cur) then
    redis.call('ZADD', key, nows, member)
    if not cur then
      added, card = 1, card + 1
      if card > cap then
        redis.call('ZREMRANGEBYRANK', key, 0, card - cap - 1)
        card = cap
      end
    end
    if expire then redis.call('PEXPIRE', key, longests) end
  end
end

local ov = 0
if isover then ov = 1 end
return {added, 0, ov, card}
