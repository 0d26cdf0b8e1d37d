-- A whole check batch on one node: each op with the function of its own
-- script (op_b backoff.lua, op_l log.lua, op_r rate.lua, defined above this
-- text), then authguard.Blocked on the results, and when the check would
-- not proceed, the undo of every op that reserved something. The Lua twin
-- of authguard.Reserve.
--
-- KEYS     one per op
-- ARGV     solved ("1" or "0"), then for each op: kind (b, l, r), gate (0, d,
--          q, c, a, s: authguard.Gate), n, its script's n arguments, then
--          its undo: kind ("" for none), m, its m arguments
-- returns  one result per op, as its script returns it, then undone 0|1
local run = {b = op_b, l = op_l, r = op_r}
local solved = ARGV[1] == "1"
local a = 2
local ops = {}
for i = 1, #KEYS do
  local kind, gate, n = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  local args = {}
  for j = 1, n do args[j] = ARGV[a + 2 + j] end
  a = a + 3 + n
  local ukind, m = ARGV[a], tonumber(ARGV[a + 1])
  local uargs = {}
  for j = 1, m do uargs[j] = ARGV[a + 1 + j] end
  a = a + 2 + m
  local r = run[kind]({KEYS[i]}, args)
  if type(r) ~= "table" or r.err then return r end
  ops[i] = {gate = gate, ukind = ukind, uargs = uargs, res = r}
end

-- authguard.Blocked
local exempt = true
for i = 1, #KEYS do
  if ops[i].gate == "a" and ops[i].res[3] == 1 then exempt = false end
end
local blocked = false
for i = 1, #KEYS do
  local g, r = ops[i].gate, ops[i].res
  if (g == "d" and r[2] > 0) or (g == "q" and r[2] > 0 and r[3] == 1) or
     (g == "c" and r[3] == 1 and not solved) or (g == "s" and r[2] > 0 and not exempt) then
    blocked = true
  end
end

local out = {}
for i = 1, #KEYS do out[i] = ops[i].res end
if blocked then
  for i = 1, #KEYS do
    local o = ops[i]
    if o.ukind ~= "" and o.res[1] == 1 then
      local r = run[o.ukind]({KEYS[i]}, o.uargs)
      if type(r) ~= "table" or r.err then return r end
    end
  end
end
out[#KEYS + 1] = blocked and 1 or 0
return out
