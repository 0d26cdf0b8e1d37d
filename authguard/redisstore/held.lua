-- The held-subjects index of one tenant (authguard/held.go): KEYS[1] a
-- hash of field -> sealed value, KEYS[2] a sorted set of field by expiry
-- (Unix ms, the engine's clock), KEYS[3] the bytes the hash holds as the
-- bound counts them (field + value + 16 per entry). All three share the
-- tenant's hash tag, so a Cluster keeps them on one node.
-- ARGV[1] is the action: put, list or delete; ARGV[2] now (Unix ms),
-- which a delete does not read: it leaves expiries alone.
--   put: ARGV[3] the bound in bytes, then field, value, expiry triples.
--        Drops expired entries, writes, then drops the entries that
--        expire first while past the bound; returns how many it dropped.
--   list: returns field, value, expiry for every entry not expired.
--   delete: ARGV[3..] fields; returns how many it removed.
local h, x, b = KEYS[1], KEYS[2], KEYS[3]
local action, now = ARGV[1], tonumber(ARGV[2])
if action == 'list' then
  local out = {}
  local live = redis.call('ZRANGEBYSCORE', x, '(' .. now, '+inf', 'WITHSCORES')
  for i = 1, #live, 2 do
    local v = redis.call('HGET', h, live[i])
    if v then
      out[#out + 1] = live[i]
      out[#out + 1] = v
      out[#out + 1] = live[i + 1]
    end
  end
  return out
end
local bytes = tonumber(redis.call('GET', b) or '0')
local function drop(f)
  local n = redis.call('HSTRLEN', h, f)
  if redis.call('HDEL', h, f) == 1 then
    bytes = bytes - n - #f - 16
  end
  return redis.call('ZREM', x, f)
end
local result = 0
if action == 'delete' then
  -- Expiries stay as they are: a delete is not given the clock.
  for i = 3, #ARGV do
    result = result + drop(ARGV[i])
  end
  if redis.call('ZCARD', x) == 0 then
    redis.call('DEL', h, x, b)
  else
    redis.call('SET', b, bytes, 'KEEPTTL')
  end
  return result
end
for _, f in ipairs(redis.call('ZRANGEBYSCORE', x, '-inf', now)) do
  drop(f)
end
if action == 'put' then
  local max = tonumber(ARGV[3])
  for i = 4, #ARGV, 3 do
    local f, v = ARGV[i], ARGV[i + 1]
    drop(f)
    redis.call('HSET', h, f, v)
    redis.call('ZADD', x, ARGV[i + 2], f)
    bytes = bytes + #v + #f + 16
  end
  while bytes > max do
    local first = redis.call('ZRANGE', x, 0, 0)
    if #first == 0 then
      break
    end
    drop(first[1])
    result = result + 1
  end
end
local last = redis.call('ZRANGE', x, -1, -1, 'WITHSCORES')
if #last == 0 then
  redis.call('DEL', h, x, b)
  return result
end
local ttl = math.max(1, math.floor(tonumber(last[2]) - now))
redis.call('SET', b, bytes, 'PX', ttl)
redis.call('PEXPIRE', h, ttl)
redis.call('PEXPIRE', x, ttl)
return result
