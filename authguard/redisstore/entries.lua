-- The administrators' entries of one tenant: a hash of id -> "<expires ms>|<value>".
-- KEYS[1]: the set. ARGV: action (put, list, del), now (Unix ms, or "" for
-- Redis TIME; an explicit time sets no PEXPIRE, as in the other scripts),
-- then for put: id, value, ttl ms, max; for del: id.
-- put answers 1, or the error TOOMANY when the set holds max unexpired
-- records and id is not one of them; list answers the unexpired values;
-- del answers 1 when id was there unexpired, else 0.
local key, action, now = KEYS[1], ARGV[1], ARGV[2]
local expire = now == ""
if now == "" then now = redisNow() end
now = tonumber(now)

local function expiry(v)
  local sep = string.find(v, '|', 1, true)
  return tonumber(string.sub(v, 1, sep - 1)), string.sub(v, sep + 1)
end

if action == 'list' then
  local all, out = redis.call('HGETALL', key), {}
  for i = 1, #all, 2 do
    local at, value = expiry(all[i + 1])
    if at > now then out[#out + 1] = value end
  end
  return out
end

local id = ARGV[3]
if action == 'del' then
  local v = redis.call('HGET', key, id)
  if not v then return 0 end
  redis.call('HDEL', key, id)
  return (expiry(v) > now) and 1 or 0
end

-- put: drop the expired records, count the rest, add.
local all, n, last = redis.call('HGETALL', key), 0, 0
local known = false
for i = 1, #all, 2 do
  local at = expiry(all[i + 1])
  if at <= now then
    redis.call('HDEL', key, all[i])
  else
    n, last = n + 1, math.max(last, at)
    if all[i] == id then known = true end
  end
end
if not known and n >= tonumber(ARGV[6]) then
  return redis.error_reply('TOOMANY the set is full')
end
local at = now + tonumber(ARGV[5])
redis.call('HSET', key, id, at .. '|' .. ARGV[4])
if expire then
  redis.call('PEXPIRE', key, math.max(last, at) - now)
end
return 1
