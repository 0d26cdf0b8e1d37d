-- Take one token from a token bucket (GCRA): the Lua twin of limits.Bucket.Take
-- and authguard.Apply.
--
-- KEYS[1]  the bucket: a string, the theoretical arrival time in ms
-- ARGV     interval_ms, burst, now_ms ("" = Redis TIME), expire ("1" = set PEXPIRE)
-- returns  {allowed 0|1, wait_ms, 0, 0}
if redis.replicate_commands then redis.replicate_commands() end
local key, interval, burst = KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2])
local now
if ARGV[3] ~= "" then
  now = tonumber(ARGV[3])
else
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local tat = tonumber(redis.call('GET', key) or "0")
local nxt = math.max(tat, now) + interval
local excess = nxt - now - burst * interval
if excess > 0 then
  return {0, excess, 0, 0} -- refused: the state and its expiry stay as they are
end
redis.call('SET', key, string.format("%d", nxt))
if ARGV[4] == "1" then redis.call('PEXPIRE', key, string.format("%d", nxt - now)) end
return {1, 0, 0, 0}
