-- A whole check batch on one node: each op with the function of its own
-- script (op_b backoff.lua, op_l log.lua, op_r rate.lua, defined above this
-- text after time.lua, each called as op(key, ARGV, offset, nargs) on its
-- own arguments inside ARGV), then authguard.Blocked on the results, and
-- when the check would not proceed, the undo of every op that reserved
-- something. A spare allowance is peeked, and applied only when the check
-- proceeds with a shared wait it exempted from. The Lua twin of
-- authguard.Reserve, with two savings:
--
--   * Redis TIME is read once for the whole batch, not once per op;
--   * once a delay, queue, CAPTCHA or deny gate has blocked the check, a later op
--     that would be undone runs as its peek: the same wait and over, no
--     write and nothing to undo. So does a shared gate with a wait once an
--     earlier result has made the check not exempt (a known network's
--     record that is not there, an allowance over its limit): nothing later
--     can make it exempt again, and a spare allowance after such a result is
--     not run at all. An attacker's refused checks cost reads.
--
-- Spare allowances may also be left out of the batch (deferred "1"): most
-- checks never run them (no known network, or no shared wait), and their
-- arguments alone cost Redis about as much as an op. Once a shared gate has
-- a wait while no earlier result has made the check not exempt, the spares
-- could exempt it: the script then undoes what it charged and answers
-- {"spares"}, and the store sends the batch again with them (one more round
-- trip, for an owner whose account has a wait). The store defers only when
-- every op before the last shared gate is undone or writes nothing.
--
-- KEYS     one per op
-- ARGV     solved ("1" or "0"), deferred ("1" or "0"), then for each op: kind
--          (b, l, r), gate (0, d, q, c, a, s, x, v, o, A: authguard.Gate), undo
--          (the op's action that undoes it, "" for none), n, its script's n
--          arguments
-- returns  one result per op, as its script returns it, then undone 0|1; or
--          {"spares"} (above)
--
-- Lua 5.1 spends more on tables and closures than on arithmetic, so the
-- dispatch builds none per op but the op's result: each op reads its
-- arguments where they are, and the time, a peek or an undo are written
-- into ARGV in place (BENCHMARKS.md, "The scripts' own cost").
--
-- Where each op script takes its now and action arguments: where encode
-- writes them (bNow, bAction, ... in redisstore.go, counted from 1 here),
-- as TestScripts_ArgumentsInEncodesOrder holds this line to.
local bNow, bAction, lNow, lAction, rNow, rAction = 9, 1, 4, 1, 7, 2
local solved, deferred = ARGV[1] == "1", ARGV[2] == "1"
local now = "" -- Redis TIME, read by the first op that needs it
local blocked = false
local bound = false -- a result so far made the check not exempt
local held = false -- a shared gate has a wait: an exemption is spent
local nk = #KEYS
local out, at = {}, {}
local spares, spareAction = {}, {}

-- rerun(i, action) runs op i again with another action: its undo
-- (authguard.Undo), or a spare allowance's own action after its peek.
local function rerun(i, action)
  local s = at[i]
  local kind = ARGV[s]
  local run, actionAt = op_r, rAction
  if kind == "b" then
    run, actionAt = op_b, bAction
  elseif kind == "l" then
    run, actionAt = op_l, lAction
  end
  ARGV[s + 3 + actionAt] = action
  return run(KEYS[i], ARGV, s + 3, tonumber(ARGV[s + 3]))
end

-- undoFrom(last) undoes every charge of ops 1 ... last.
local function undoFrom(last)
  for i = 1, last do
    if ARGV[at[i] + 2] ~= "" and out[i][1] == 1 then
      local r = rerun(i, ARGV[at[i] + 2])
      if type(r) ~= "table" or r.err then return r end
    end
  end
end

local a = 3
for i = 1, nk do
  local kind, gate, undo, n = ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  local o = a + 3
  -- each script's now_ms and action argument
  local run, nowAt, actionAt = op_r, rNow, rAction
  if kind == "b" then
    run, nowAt, actionAt = op_b, bNow, bAction
  elseif kind == "l" then
    run, nowAt, actionAt = op_l, lNow, lAction
  end
  if ARGV[o + nowAt] == "" then
    if now == "" then now = redisNow() end
    ARGV[o + nowAt] = now
  end
  -- The verdict rule (authguard's readings) as it reads gates, written from
  -- it: TestCheckScript_ReadsGatesByAuthguardsVerdictRule holds the lines
  -- that start "local spare", "local binds", "local stops" and "local
  -- shared" to what it writes, and no other line names a gate.
  local spare = gate == "A" or gate == "o"
  local r
  if blocked and undo ~= "" then
    ARGV[o + actionAt], ARGV[a + 2] = "peek", ""
  elseif undo ~= "" and spare then
    if bound then
      -- a spare allowance cannot exempt a check an earlier result made not
      -- exempt: not run at all, its result read as within its limit (which
      -- no verdict then reads)
      r, ARGV[a + 2] = {0, 0, 0, 0}, ""
    else
      -- a spare allowance is peeked, and applied below only when it exempts
      spares[#spares + 1], spareAction[i] = i, ARGV[o + actionAt]
      ARGV[o + actionAt] = "peek"
    end
  end
  if r == nil then
    r = run(KEYS[i], ARGV, o, n)
    if type(r) ~= "table" or r.err then return r end
  end
  out[i], at[i] = r, a
  local waits, over = r[2] > 0, r[3] == 1
  local binds = (gate == "a" or gate == "o") and over or gate == "v" and not over or gate == "A" and (over or not solved)
  local stops = gate == "d" and waits or gate == "q" and waits and over or gate == "c" and over and not solved or gate == "x" and over
  local shared = gate == "s"
  if binds then bound = true end
  if shared and waits then
    -- a wait an exemption would skip: it stops the check once any result,
    -- before or after it, makes the check not exempt
    if deferred and not bound and not blocked then
      -- the spares left out could exempt the check from this wait
      local err = undoFrom(i)
      if err then return err end
      return {"spares"}
    end
    held = true
    if bound then blocked = true end
  end
  if stops then blocked = true end
  a = o + n + 1
end
-- authguard.Blocked: a shared wait before the result that made the check
-- not exempt stops it too.
if held and bound then blocked = true end

-- Not blocked, with a shared wait: the spare allowances exempted the check
-- and are spent (authguard.Finish); their peeks said they would admit, and
-- nothing ran in between.
if held and not blocked then
  for _, i in ipairs(spares) do
    local r = rerun(i, spareAction[i])
    if type(r) ~= "table" or r.err then return r end
    out[i] = r
  end
end

-- Blocked: every charge is undone.
if blocked then
  local err = undoFrom(nk)
  if err then return err end
end
out[nk + 1] = blocked and 1 or 0
return out
