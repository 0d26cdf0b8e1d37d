-- One step of a rate limit: the Lua twin of package limits' FixedWindow,
-- SlidingLog, SlidingCounter, Bucket and LeakyBucket (TakeN, GiveBackN and
-- TTL) and of authguard's applyRate. Keep them in step: internal/storetest compares them
-- on random operation sequences. Every number is an integer of milliseconds
-- or units below 2^52 (limits' Validate bounds them), so float64 is exact;
-- a/b is only floored for non-negative a and b.
--
-- KEYS[1]  the state, a string: fixed_window "start:count"; sliding_log
--          "t1,t2,..." oldest first; sliding_counter "start:prev:curr";
--          token_bucket and leaky_bucket the TAT or drain time; conversion
--          "start:prevSent:currSent:prevVerified:currVerified"
-- ARGV     alg (the algorithm), action ("take" | "peek" | "refund" |
--          "credit"), w (the window, ms), interval (ms), limit, cost, now
--          (ms, "" = Redis TIME), expire ("1" = set PEXPIRE), minPercent
--          (conversion only): the order of encode's rateArgs
-- returns  {charged 0|1, wait_ms, over 0|1, 0, remaining, reset_ms}
--
-- A refused take, a peek and a refund that gives back nothing write nothing;
-- a refund that leaves nothing deletes the key.
local key, A, o, nargs = KEYS[1], ARGV, 0, #ARGV
if A[7] == "" then A[7] = redisNow() end
--- op body: check.lua runs what follows as op_r(key, A, o, nargs), its arguments A[o + 1 ... o + nargs]
local alg, action, w, interval, limit, cost, now, expire, minPercent = unpack(A, o + 1, o + 9)
w, interval, limit, cost = tonumber(w), tonumber(interval), tonumber(limit), tonumber(cost)
now, expire = tonumber(now), expire == "1"
local raw = redis.call('GET', key)

-- The take of a token bucket, the rate every login check counts (ip_rate),
-- in straight code: the general path below builds eight closures for it.
-- The same arithmetic as the bucket's take further down.
if alg == "token_bucket" and action == "take" then
  local tat = 0
  if raw then tat = tonumber(raw) end
  local capacity = limit * interval
  local held = tat - now
  if held < 0 then held = 0 end
  local left = capacity - held
  if left < 0 then left = 0 end
  local remaining = math.floor(left / interval)
  if cost < 1 or cost > limit then return {0, 0, 1, 0, remaining, held} end
  local nxt = now + held + cost * interval
  local excess = nxt - now - capacity
  if excess > 0 then return {0, excess, 1, 0, remaining, held} end
  local ttl = nxt - now
  if expire then
    redis.call('SET', key, string.format("%d", nxt), 'PX', string.format("%d", ttl))
  else
    redis.call('SET', key, string.format("%d", nxt))
  end
  left = capacity - ttl
  if left < 0 then left = 0 end
  return {1, 0, 0, 0, math.floor(left / interval), ttl}
end

local function fmt(x) return string.format("%d", x) end
local function untl(t) if t > now then return t - now end return 0 end
local function fdiv(a, b) return math.floor(a / b) end

-- Each algorithm: take(c) returns allowed, wait, remaining, reset, the new
-- state as a string (nil: unchanged), and its TTL; giveback(c) returns
-- remaining, the new state's TTL (0: it holds nothing) and the new state as a
-- string (nil: unchanged); ttl() is the stored state's TTL. A cost outside
-- [1, limit] is never taken, so nothing of it is given back.
local take, giveback, ttl, credit

if alg == "fixed_window" then
  local start, count = 0, 0
  if raw then
    local a, b = string.match(raw, "^(%-?%d+):(%d+)$")
    start, count = tonumber(a), tonumber(b)
  end
  ttl = function()
    if count <= 0 then return 0 end
    return untl(start + w)
  end
  take = function(c)
    local cs, cc = start, count
    if now >= start + w then cs, cc = now - now % w, 0 end
    local finish = cs + w
    local remaining = math.max(0, limit - cc)
    if c < 1 or c > limit then return false, 0, remaining, ttl() end
    if cc + c > limit then return false, finish - now, remaining, ttl() end
    cc = cc + c
    return true, 0, limit - cc, finish - now, fmt(cs) .. ":" .. fmt(cc), finish - now
  end
  giveback = function(c)
    -- once the state's window is over its units left with it
    if now >= start + w then return limit, ttl(), nil end
    if c < 1 or c > limit then return math.max(0, limit - count), ttl(), nil end
    local cc = math.max(0, count - c)
    if cc == 0 then return limit, 0, "" end
    return math.max(0, limit - cc), untl(start + w), fmt(start) .. ":" .. fmt(cc)
  end

elseif alg == "sliding_log" then
  local log = {}
  if raw then
    for t in string.gmatch(raw, "[^,]+") do log[#log + 1] = tonumber(t) end
  end
  ttl = function()
    if #log == 0 then return 0 end
    return untl(log[#log] + w)
  end
  -- first is the index of the first entry within the window
  local function first()
    local i = 1
    while i <= #log and log[i] <= now - w do i = i + 1 end
    return i
  end
  take = function(c)
    local i = first()
    local n = #log - i + 1 -- entries in the window: log[i..#log]
    local remaining = math.max(0, limit - n)
    if c < 1 or c > limit then return false, 0, remaining, ttl() end
    local excess = n + c - limit
    if excess > 0 then
      return false, log[i + excess - 1] + w - now, remaining, ttl()
    end
    local at = now
    if n > 0 and log[#log] > at then at = log[#log] end
    local parts = {}
    for j = i, #log do parts[#parts + 1] = fmt(log[j]) end
    for _ = 1, c do parts[#parts + 1] = fmt(at) end
    return true, 0, remaining - c, at + w - now, table.concat(parts, ","), at + w - now
  end
  giveback = function(c)
    local i = first()
    local n = #log - i + 1
    if c < 1 or c > limit then return math.max(0, limit - n), ttl(), nil end
    -- the c newest entries in the window go, and those that left it
    local keep = n - math.min(c, n)
    if keep == 0 then return limit, 0, "" end
    local parts = {}
    for j = i, i + keep - 1 do parts[#parts + 1] = fmt(log[j]) end
    return math.max(0, limit - keep), untl(log[i + keep - 1] + w), table.concat(parts, ",")
  end

elseif alg == "sliding_counter" then
  local start, prev, curr = 0, 0, 0
  if raw then
    local a, b, d = string.match(raw, "^(%-?%d+):(%d+):(%d+)$")
    start, prev, curr = tonumber(a), tonumber(b), tonumber(d)
  end
  local function ttlOf(s, p, q)
    if q > 0 then return untl(s + 2 * w) end
    if p > 0 then return untl(s + w) end
    return 0
  end
  ttl = function() return ttlOf(start, prev, curr) end
  -- current: the windows rolled forward to now
  local function current()
    if now < start + w then return start, prev, curr end -- the state's window is current
    if now < start + 2 * w then return start + w, curr, 0 end
    return now - now % w, 0, 0
  end
  -- free: limit×w less the estimate×w on a rolled state
  local function freeOf(cs, cp, cc)
    local elapsed = math.max(0, now - cs)
    return limit * w - cp * (w - elapsed) - cc * w
  end
  take = function(c)
    local cs, cp, cc = current()
    local free = freeOf(cs, cp, cc)
    local remaining = fdiv(math.max(0, free), w)
    if c < 1 or c > limit then return false, 0, remaining, ttl() end
    if free < c * w then
      -- admitAt: the earliest time the estimate leaves room for c
      local at
      local r = limit - cc - c
      if r >= 0 and cp > 0 then
        local e = w - fdiv(r * w, cp)
        if e < w then at = cs + e end
      end
      if not at then
        if cc == 0 then
          at = cs + w
        else
          at = cs + w + math.max(0, w - fdiv((limit - c) * w, cc))
        end
      end
      return false, at - now, remaining, ttl()
    end
    cc = cc + c
    local t = ttlOf(cs, cp, cc)
    return true, 0, fdiv(free - c * w, w), t, fmt(cs) .. ":" .. fmt(cp) .. ":" .. fmt(cc), t
  end
  giveback = function(c)
    local cs, cp, cc = current()
    if c < 1 or c > limit then return fdiv(math.max(0, freeOf(cs, cp, cc)), w), ttl(), nil end
    -- off the current window's count first, then the previous window's
    local fromCurr = math.min(c, cc)
    cc = cc - fromCurr
    cp = math.max(0, cp - (c - fromCurr))
    if cp == 0 and cc == 0 then return limit, 0, "" end
    return fdiv(math.max(0, freeOf(cs, cp, cc)), w), ttlOf(cs, cp, cc), fmt(cs) .. ":" .. fmt(cp) .. ":" .. fmt(cc)
  end

elseif alg == "token_bucket" or alg == "leaky_bucket" then
  local tat = 0
  if raw then tat = tonumber(raw) end
  local capacity = limit * interval
  local function remainingAt(t) return fdiv(math.max(0, capacity - math.max(0, t - now)), interval) end
  ttl = function() return untl(tat) end
  take = function(c)
    if c < 1 or c > limit then return false, 0, remainingAt(tat), untl(tat) end
    local start = math.max(tat, now)
    local nxt = start + c * interval
    local excess = nxt - now - capacity
    if excess > 0 then return false, excess, remainingAt(tat), untl(tat) end
    local wait = start - now
    if alg == "token_bucket" then wait = 0 end -- a token bucket lets the call go ahead now
    return true, wait, remainingAt(nxt), nxt - now, fmt(nxt), nxt - now
  end
  giveback = function(c)
    if c < 1 or c > limit then return remainingAt(tat), untl(tat), nil end
    -- the queue drains c slots earlier; at or before now it is empty
    local t = tat - c * interval
    if t <= now then return remainingAt(0), 0, "" end
    return remainingAt(t), t - now, fmt(t)
  end

elseif alg == "conversion" then
  -- limits.Conversion: limit is MinVolume
  minPercent = tonumber(minPercent)
  local start, ps, cs, pv, cv = 0, 0, 0, 0, 0
  if raw then
    local a, b, c, d, e = string.match(raw, "^(%-?%d+):(%d+):(%d+):(%d+):(%d+)$")
    start, ps, cs, pv, cv = tonumber(a), tonumber(b), tonumber(c), tonumber(d), tonumber(e)
  end
  local function ttlOf(st, s1, s2, v1, v2)
    if s2 > 0 or v2 > 0 then return untl(st + 2 * w) end
    if s1 > 0 or v1 > 0 then return untl(st + w) end
    return 0
  end
  ttl = function() return ttlOf(start, ps, cs, pv, cv) end
  local function current()
    if now < start + w then return start, ps, cs, pv, cv end
    if now < start + 2 * w then return start + w, cs, 0, cv, 0 end
    return now - now % w, 0, 0, 0, 0
  end
  local function sentOf(st, s1, s2)
    local elapsed = math.max(0, now - st)
    return fdiv(s1 * (w - elapsed) + s2 * w, w)
  end
  local function low(st, s1, s2, v1, v2)
    local elapsed = math.max(0, now - st)
    local sent = s1 * (w - elapsed) + s2 * w
    local verified = v1 * (w - elapsed) + v2 * w
    return sent >= limit * w and verified * 100 < sent * minPercent
  end
  local function state(st, s1, s2, v1, v2)
    return fmt(st) .. ":" .. fmt(s1) .. ":" .. fmt(s2) .. ":" .. fmt(v1) .. ":" .. fmt(v2)
  end
  take = function(c)
    local st, s1, s2, v1, v2 = current()
    if c < 1 or c > limit or low(st, s1, s2, v1, v2) then return false, 0, sentOf(st, s1, s2), ttl() end
    s2 = s2 + c
    local t = ttlOf(st, s1, s2, v1, v2)
    return true, 0, sentOf(st, s1, s2), t, state(st, s1, s2, v1, v2), t
  end
  giveback = function(c)
    local st, s1, s2, v1, v2 = current()
    if c < 1 or c > limit then return sentOf(st, s1, s2), ttl(), nil end
    local fromCurr = math.min(c, s2)
    s2 = s2 - fromCurr
    s1 = math.max(0, s1 - (c - fromCurr))
    if s1 == 0 and s2 == 0 and v1 == 0 and v2 == 0 then return 0, 0, "" end
    return sentOf(st, s1, s2), ttlOf(st, s1, s2, v1, v2), state(st, s1, s2, v1, v2)
  end
  credit = function(c)
    local st, s1, s2, v1, v2 = current()
    if c < 1 then return sentOf(st, s1, s2), ttl(), nil end
    v2 = v2 + c
    return sentOf(st, s1, s2), ttlOf(st, s1, s2, v1, v2), state(st, s1, s2, v1, v2)
  end

else
  return redis.error_reply("rate.lua: unknown algorithm " .. alg)
end

-- set writes the state with its expiry in one command.
local function set(state, ms)
  if expire then
    redis.call('SET', key, state, 'PX', fmt(ms))
  else
    redis.call('SET', key, state)
  end
end

if action == "credit" then
  -- a verification: only a conversion counts it; elsewhere a peek of Remaining
  if not credit then
    local _, _, remaining, reset = take(0)
    return {0, 0, 0, 0, remaining, reset}
  end
  local remaining, newttl, state = credit(cost)
  if state then set(state, newttl) end
  return {0, 0, 0, 0, remaining, newttl}
end

if action == "refund" then
  local remaining, newttl, state = giveback(cost)
  if state then
    if newttl > 0 then
      set(state, newttl)
    else
      redis.call('DEL', key)
    end
  end
  return {0, 0, 0, 0, remaining, newttl}
end

local allowed, wait, remaining, reset, state, newttl = take(cost)
local charged, over = 0, 1
if allowed then over = 0 end
if action == "take" then
  if allowed then
    charged = 1
    set(state, newttl)
  end
elseif action == "peek" then
  reset = ttl()
else
  return redis.error_reply("rate.lua: unknown action " .. action)
end
return {charged, wait, over, 0, remaining, reset}
