-- The check script's own Lua cost, without Redis: run by scripts/bench-lua.sh
-- under lua5.1 (the Lua Redis embeds) with redis.call mocked as a key that
-- does not exist yet (GET nil, ZCARD 0, ...). Prints microseconds per fresh
-- IPv4 login check, the copy of ARGV each call needs taken off.
--   lua5.1 scripts/bench-lua.lua CHECK_SCRIPT.lua [CALLS]
local calls = 0
redis = {
  call = function(cmd)
    calls = calls + 1
    if cmd == 'TIME' then return {"1796134374", "52000"} end
    if cmd == 'GET' or cmd == 'ZSCORE' then return false end
    if cmd == 'ZCARD' or cmd == 'ZREMRANGEBYSCORE' or cmd == 'ZCOUNT' then return 0 end
    return {ok = "OK"}
  end,
  replicate_commands = function() return true end,
  error_reply = function(s) return {err = s} end,
}
redis.pcall = redis.call
local src = assert(io.open(arg[1])):read("*a")
local check = assert(loadstring("return function(KEYS, ARGV) " .. src .. "\nend"))()
local n = tonumber(arg[2] or "100000")
local KEYS = {"tg:default:login:acct:WzkejON2s3pl453nKFQP9g", "tg:default:login:iprate:0AJ9yUIJzQkqqLJ5zMF5aA",
  "tg:default:login:ipspray:0AJ9yUIJzQkqqLJ5zMF5aA", "tg:default:login:ipfail:0AJ9yUIJzQkqqLJ5zMF5aA",
  "tg:default:login:pwspray:Q340A_zFfhBI_CjH4CTedQ"}
-- A login check's arguments as the engine sends them (MONITOR).
local ARGV = {"0",
  "b", "d", "refund", "11", "charge", "5", "1000", "2", "1800000", "86400000", "Q340A_zFfhBI_CjH4CTedQ", "86400000", "", "1", "K8ROY8UuqqQBUAjrp2ubxQ",
  "r", "d", "", "9", "token_bucket", "take", "0", "50", "200", "1", "", "1", "0",
  "l", "c", "remove", "9", "admit", "WzkejON2s3pl453nKFQP9g", "0", "", "1", "3600000", "10", "86400000", "20",
  "l", "c", "remove", "7", "admit", "K8ROY8UuqqQBUAjrp2ubxQ", "0", "", "1", "3600000", "100",
  "l", "c", "remove", "9", "admit", "WzkejON2s3pl453nKFQP9g", "0", "", "1", "3600000", "10", "86400000", "20"}
local function fresh()
  local a = {}
  for j = 1, #ARGV do a[j] = ARGV[j] end
  return a
end
local t0 = os.clock()
for _ = 1, n do fresh() end
local copy = os.clock() - t0
local t = os.clock()
for _ = 1, n do check(KEYS, fresh()) end
local dt = os.clock() - t - copy
print(string.format("%.2f", dt / n * 1e6))
io.stderr:write(string.format("%d Redis calls per check\n", calls / n))
