-- A whole check batch on one node: each op with the function of its own
-- script (op_b backoff.lua, op_l log.lua, op_r rate.lua, defined above this
-- text), then authguard.Blocked on the results, and when the check would
-- not proceed, the undo of every op that reserved something. The Lua twin
-- of authguard.Reserve, with two savings:
--
--   * Redis TIME is read once for the whole batch, not once per op;
--   * once a delay, queue, CAPTCHA or deny gate has blocked the check, a later op
--     that would be undone runs as its peek: the same wait and over, no
--     write and nothing to undo. An attacker's refused checks cost reads.
--
-- KEYS     one per op
-- ARGV     solved ("1" or "0"), then for each op: kind (b, l, r), gate (0, d,
--          q, c, a, s, x: authguard.Gate), undo (the op's action that undoes
--          it, "" for none), n, its script's n arguments
-- returns  one result per op, as its script returns it, then undone 0|1
local run = {b = op_b, l = op_l, r = op_r}
-- where each script reads its action and now_ms
local actionAt = {b = 1, l = 1, r = 2}
local nowAt = {b = 9, l = 4, r = 7}
local solved = ARGV[1] == "1"
local now = false
local blocked = false
local a = 2
local ops = {}
for i = 1, #KEYS do
  local kind, gate, undo, n = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  local args = {}
  for j = 1, n do args[j] = ARGV[a + 3 + j] end
  a = a + 4 + n
  if args[nowAt[kind]] == "" then
    if not now then
      local t = redis.call('TIME')
      now = string.format("%d", tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
    end
    args[nowAt[kind]] = now
  end
  if blocked and undo ~= "" then
    args[actionAt[kind]], undo = "peek", ""
  end
  local r = run[kind]({KEYS[i]}, args)
  if type(r) ~= "table" or r.err then return r end
  ops[i] = {gate = gate, kind = kind, undo = undo, args = args, res = r}
  if (gate == "d" and r[2] > 0) or (gate == "q" and r[2] > 0 and r[3] == 1) or
     (gate == "c" and r[3] == 1 and not solved) or (gate == "x" and r[3] == 1) then
    blocked = true
  end
end

-- authguard.Blocked: the allowance and shared gates need every result.
local exempt = true
for i = 1, #KEYS do
  if ops[i].gate == "a" and ops[i].res[3] == 1 then exempt = false end
end
for i = 1, #KEYS do
  local r = ops[i].res
  if ops[i].gate == "s" and r[2] > 0 and not exempt then blocked = true end
end

local out = {}
for i = 1, #KEYS do out[i] = ops[i].res end
if blocked then
  for i = 1, #KEYS do
    local o = ops[i]
    if o.undo ~= "" and o.res[1] == 1 then
      o.args[actionAt[o.kind]] = o.undo
      local r = run[o.kind]({KEYS[i]}, o.args)
      if type(r) ~= "table" or r.err then return r end
    end
  end
end
out[#KEYS + 1] = blocked and 1 or 0
return out
