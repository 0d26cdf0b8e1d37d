-- One step of a progressive-delay counter: the Lua twin of backoff.Policy's
-- transitions (Charge, Refund, Confirm, Fail, Settle, Hold, Release) and
-- authguard.Apply. Keep the two in step: internal/storetest compares them on
-- random operation sequences.
--
-- KEYS[1]  the counter: a string "n|l|p|s|a": failures, last ms, previous last
--          ms, "fingerprint:ms,..." oldest first, "attempt,..." pending
--          attempts, oldest first (a string costs less memory than a hash of
--          the same five fields, and one SET ... PX writes it with its expiry)
-- ARGV     action, free, base_ms, factor, max_ms, forget_ms, fingerprint,
--          window_ms, now_ms ("" = Redis TIME), expire ("1" = set PEXPIRE),
--          attempt (the attempt id, or "")
-- returns  {charged 0|1, wait_ms, 0, failures}
--
-- A step that changes nothing (a refused charge, a peek) writes nothing, so
-- it costs no write and still answers while Redis is out of memory.
if redis.replicate_commands then redis.replicate_commands() end
local key, action = KEYS[1], ARGV[1]
local free, base, factor = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local maxd, forget, fp, window = tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7], tonumber(ARGV[8])
local now
if ARGV[9] ~= "" then
  now = tonumber(ARGV[9])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local expire = ARGV[10] == "1"
local attempt = ARGV[11]

if action == "clear" then
  redis.call('DEL', key)
  return {0, 0, 0, 0}
end

local n, last, prev, seen, pending = 0, 0, 0, {}, {}
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
  for f, at in string.gmatch(ss, "([^,:]+):(%d+)") do
    seen[#seen + 1] = {f, tonumber(at)}
  end
  for a in string.gmatch(sa, "[^,]+") do pending[#pending + 1] = a end
end

-- Current: forget after the quiet period; drop fingerprints older than window.
if n > 0 and now - last >= forget then
  n, last, prev, pending = 0, 0, 0, {}
end
local kept = {}
for _, s in ipairs(seen) do
  if now - s[2] < window then kept[#kept + 1] = s end
end
seen = kept

local function delay(failures)
  if failures < free then return 0 end
  local d, i = base, free
  if factor > 1 then
    while i < failures and d < maxd do
      d = d * factor
      i = i + 1
    end
  end
  if d > maxd then d = maxd end
  return math.floor(d)
end

local function wait()
  if n == 0 then return 0 end
  local w = last + delay(n) - now
  if w > 0 then return w end
  return 0
end

local function has(f)
  for _, s in ipairs(seen) do
    if s[1] == f then return true end
  end
  return false
end

local function remember(f)
  if f == "" then return end
  local out = {}
  for _, s in ipairs(seen) do
    if s[1] ~= f then out[#out + 1] = s end
  end
  out[#out + 1] = {f, now}
  while #out > 8 do table.remove(out, 1) end -- backoff.MaxSeen
  seen = out
end

local function refund()
  if n > 0 then
    n, last = n - 1, prev
    if n == 0 then last, prev, pending = 0, 0, {} end
  end
end

-- Hold: remember attempt as pending (backoff.MaxPending = 8 at most).
local function hold(a)
  if a == "" then return end
  pending[#pending + 1] = a
  while #pending > 8 do table.remove(pending, 1) end
end

-- Release: take attempt off the pending list; true when it was there.
local function release(a)
  if a == "" then return false end
  for i, x in ipairs(pending) do
    if x == a then
      table.remove(pending, i)
      return true
    end
  end
  return false
end

local charged, w = 0, 0
if action == "peek" then
  return {0, wait(), 0, n}
elseif action == "succeed" then
  if release(attempt) then refund() end
  w = wait()
elseif action == "charge" then
  w = wait()
  if w > 0 or (fp ~= "" and has(fp)) then
    return {0, w, 0, n} -- refused, or a paid-for password: nothing changes
  end
  n, prev, last, charged = n + 1, last, now, 1
  hold(attempt)
elseif action == "refund" then
  if attempt == "" or release(attempt) then refund() end
  w = wait()
elseif action == "confirm" then
  release(attempt)
  remember(fp)
  w = wait()
elseif action == "fail" then
  if not (fp ~= "" and has(fp)) then
    n, prev, last, charged = n + 1, last, now, 1
    remember(fp)
  end
  w = wait()
else
  return redis.error_reply("backoff.lua: unknown action " .. action)
end

-- TTL: until the counter is forgotten and every fingerprint has aged out.
local untl = 0
if n > 0 then untl = last + forget end
for _, s in ipairs(seen) do
  if s[2] + window > untl then untl = s[2] + window end
end
local ttl = untl - now
if ttl <= 0 then
  redis.call('DEL', key)
else
  local parts = {}
  for i, s in ipairs(seen) do parts[i] = s[1] .. ":" .. string.format("%d", s[2]) end
  local v = string.format("%d|%d|%d|", n, last, prev) .. table.concat(parts, ",") .. "|" .. table.concat(pending, ",")
  if expire then
    redis.call('SET', key, v, 'PX', string.format("%d", ttl))
  else
    redis.call('SET', key, v)
  end
end
return {charged, w, 0, n}
