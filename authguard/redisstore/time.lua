-- What every script of the store runs first: redisstore puts this file in
-- front of each as it loads it (scripts/check-script.sh as it assembles the
-- check script).
--
-- A script that reads TIME and then writes must replicate its writes, not
-- itself (Redis 3.2 to 4.0 replicate a script whole unless it asks, and
-- then refuse a write after TIME; from 5.0 on this is how they replicate).
if redis.replicate_commands then redis.replicate_commands() end

-- redisNow is Redis's clock in Unix milliseconds, as a string: the time of
-- a call whose caller gave none (""), which is every call but a test's.
-- Time comes from Redis, not from the instance, so that instances whose
-- clocks differ agree on every window and delay. The one place a script
-- reads TIME.
local function redisNow()
  local t = redis.call('TIME')
  return string.format("%d", tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
end
