-- One step of a progressive-delay counter: the Lua twin of backoff.Policy's
-- transitions (Charge, Refund, Confirm, Fail, Settle, Hold, Release) and
-- authguard.Apply. Keep the two in step: internal/storetest compares them on
-- random operation sequences.
--
-- KEYS[1]  the counter: a string "n|l|p|s|a": failures, last ms, previous last
--          ms, "fingerprint:ms,..." oldest first, "attempt,..." pending
--          attempts, oldest first (a string costs less memory than a hash of
--          the same five fields, and one SET ... PX writes it with its expiry)
-- ARGV     action, free, base (ms), factor, maxd (the longest delay, ms),
--          forget (ms), fp (the fingerprint, or ""), window (ms), now (ms, ""
--          = Redis TIME), expire ("1" = set PEXPIRE), attempt (the attempt
--          id, or ""): the order of encode's backoffArgs
-- returns  {charged 0|1, wait_ms, 0, failures}
--
-- A step that changes nothing (a refused charge, a peek) writes nothing, so
-- it costs no write and still answers while Redis is out of memory.
local key, A, o, nargs = KEYS[1], ARGV, 0, #ARGV
if A[9] == "" then A[9] = redisNow() end
--- op body: check.lua runs what follows as op_b(key, A, o, nargs), its arguments A[o + 1 ... o + nargs]
local action, free, base, factor, maxd, forget, fp, window, now, expire, attempt = unpack(A, o + 1, o + 11)
if action == "clear" then
  redis.call('DEL', key)
  return {0, 0, 0, 0}
end
free, base, factor, maxd, forget, window = tonumber(free), tonumber(base), tonumber(factor), tonumber(maxd), tonumber(forget), tonumber(window)
now, expire = tonumber(now), expire == "1"

-- The state, current: failures forgotten after the quiet period, and the
-- fingerprints (sf, their times st) still within window. No closures and
-- few tables: in Lua 5.1 each costs more than the arithmetic here.
local n, last, prev = 0, 0, 0
local sf, st, pending = {}, {}, {}
local raw = redis.pcall('GET', key)
if type(raw) == "table" and raw.err then
  -- A counter written before the string format, as a hash {n, l, p, s, a}:
  -- read it; the SET below replaces it. (Only during an upgrade.)
  local h = redis.call('HMGET', key, 'n', 'l', 'p', 's', 'a')
  raw = string.format("%s|%s|%s|%s|%s", h[1] or "0", h[2] or "0", h[3] or "0", h[4] or "", h[5] or "")
end
if raw then
  local sn, sl, sp, ss, sa = string.match(raw, "^(%d+)|(%d+)|(%d+)|([^|]*)|([^|]*)$")
  n, last, prev = tonumber(sn), tonumber(sl), tonumber(sp)
  if ss ~= "" then
    for f, at in string.gmatch(ss, "([^,:]+):(%d+)") do
      at = tonumber(at)
      if now - at < window then
        sf[#sf + 1], st[#st + 1] = f, at
      end
    end
  end
  if sa ~= "" then
    for x in string.gmatch(sa, "[^,]+") do pending[#pending + 1] = x end
  end
  if n > 0 and now - last >= forget then
    n, last, prev, pending = 0, 0, 0, {}
  end
end

-- known: fp is a fingerprint already paid for within the window.
local known = false
if fp ~= "" then
  for i = 1, #sf do
    if sf[i] == fp then known = true break end
  end
end

-- released: attempt was pending and is taken off the list (Release);
-- newest: it was the last one pending, the newest charge held.
local newest = false
local function release()
  if attempt == "" then return false end
  for i = 1, #pending do
    if pending[i] == attempt then
      newest = i == #pending
      table.remove(pending, i)
      return true
    end
  end
  return false
end

local charged, remember = 0, false
if action == "charge" then
  if not known then
    charged = 1
  end
elseif action == "peek" then
elseif action == "succeed" then
  -- Refund: Last goes back to Prev unless a newer charge is still pending.
  if release() and n > 0 then
    n = n - 1
    if newest then last = prev end
    if n == 0 then last, prev, pending = 0, 0, {} end
  end
elseif action == "refund" then
  if (attempt == "" or release()) and n > 0 then
    n = n - 1
    if attempt == "" or newest then last = prev end
    if n == 0 then last, prev, pending = 0, 0, {} end
  end
elseif action == "confirm" then
  -- The newest pending failure stays counted: no refund goes back past it.
  if release() and newest then prev = last end
  remember = fp ~= ""
elseif action == "fail" then
  -- With an attempt, once: not when it is pending already (a fallback's
  -- charge written back twice), and else held as pending.
  local held = false
  if attempt ~= "" then
    for i = 1, #pending do
      if pending[i] == attempt then held = true end
    end
  end
  if not known and not held then
    -- prev moves with last: no refund goes back past a failure no charge held.
    n, prev, last, charged = n + 1, now, now, 1
    remember = fp ~= ""
    if attempt ~= "" then
      pending[#pending + 1] = attempt
      while #pending > 8 do table.remove(pending, 1) end
    end
  end
else
  return redis.error_reply("backoff.lua: unknown action " .. action)
end

-- w: the wait before the next attempt (for a charge, before this one).
local w = 0
if n > 0 then
  local d = 0
  if n >= free then
    local i = free
    d = base
    if factor > 1 then
      while i < n and d < maxd do
        d = d * factor
        i = i + 1
      end
    end
    if d > maxd then d = maxd end
    d = math.floor(d)
  end
  w = last + d - now
  if w < 0 then w = 0 end
end
if action == "peek" then return {0, w, 0, n} end
if action == "charge" then
  if w > 0 or known then
    return {0, w, 0, n} -- refused, or a paid-for password: nothing changes
  end
  n, prev, last = n + 1, last, now
  -- Hold: remember the attempt as pending (backoff.MaxPending = 8 at most).
  if attempt ~= "" then
    pending[#pending + 1] = attempt
    while #pending > 8 do table.remove(pending, 1) end
  end
end
if remember then
  -- fp goes last, with the time now; at most backoff.MaxSeen = 8 are kept.
  local nf, nt = {}, {}
  for i = 1, #sf do
    if sf[i] ~= fp then nf[#nf + 1], nt[#nt + 1] = sf[i], st[i] end
  end
  nf[#nf + 1], nt[#nt + 1] = fp, now
  while #nf > 8 do
    table.remove(nf, 1)
    table.remove(nt, 1)
  end
  sf, st = nf, nt
end

-- TTL: until the counter is forgotten and every fingerprint has aged out.
local untl = 0
if n > 0 then untl = last + forget end
for i = 1, #st do
  if st[i] + window > untl then untl = st[i] + window end
end
local ttl = untl - now
if ttl <= 0 then
  redis.call('DEL', key)
else
  local seen = ""
  if #sf > 0 then
    local parts = {}
    for i = 1, #sf do parts[i] = sf[i] .. ":" .. string.format("%d", st[i]) end
    seen = table.concat(parts, ",")
  end
  local v = string.format("%d|%d|%d|", n, last, prev) .. seen .. "|" .. table.concat(pending, ",")
  if expire then
    redis.call('SET', key, v, 'PX', string.format("%d", ttl))
  else
    redis.call('SET', key, v)
  end
end
return {charged, w, 0, n}
