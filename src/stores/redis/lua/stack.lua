-- stack.lua — decides the usual request against a stack of several policies (a check in
-- reject mode, cost >= 1, no leases, no blocks, every algorithm with a fused step) in one
-- atomic step: each policy's step (single.lua's) decides it, and the new states are written
-- only when every policy admits (all-or-nothing; in reject mode the slot is now for all).
-- check.lua decides the same requests the long way (read_context, decide, decision_text):
-- this is the same decision for half the Redis time, which is what a multi-descriptor
-- Envoy request or a route with two limits costs.
-- KEYS[i]    state of policy i, i = 1..N
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"; either may
--            end in "@<deadlineMs>": past it the call raises LATE and changes nothing (read_clock)
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  cost, absent for 1
-- Returns "<1|0> <sec> <usec> <stored 1>\n<stored 2>…": whether it was admitted, the server
--   clock (TIME's two numbers; absent with the client clock) and each state as stored before
--   the call ("" when none). The caller computes the decision from those with src/core
--   (decodeStackDecision in src/stores/redis/codec.ts) and checks that it agrees.
--   "r" when a stored state is not its policy's algorithm's own (a redefined policy, a block
--   kept from a policy that had one): nothing is written, and the caller asks check.lua.
local now_ms, slack_ms, time = read_clock(ARGV[1])
local n = ARGV[2] + 0
local cost = 1
if ARGV[n + 3] then cost = ARGV[n + 3] + 0 end
-- Each admitted policy's write, as four parallel lists, and the stored texts: the library's
-- own tables, reused by every call (Redis runs one script at a time, and a call reads only
-- the indexes 1..n it wrote): a table built per call is most of this script's Lua time.
local raws, fresh_ats, values, at_texts, sames = STACK_RAWS, STACK_FRESH_ATS, STACK_VALUES, STACK_AT_TEXTS, STACK_SAMES
-- One MGET for every state (the keys share a slot: the caller hashes them together).
local stored = redis.call("MGET", unpack(KEYS, 1, n))
local admitted = true
for i = 1, n do
  local policy = policy_of(ARGV[2 + i])
  local impl = policy.impl
  if not impl.step or policy.concurrency or policy.blockMs then error("spillway: stack.lua decides only stepped policies without leases or blocks") end
  local raw = stored[i]
  if raw and sub(raw, 1, 2) ~= impl.tag then return "r" end
  raws[i] = raw or ""
  -- Once one policy refuses, nothing is written: the rest are only read (for the caller).
  if admitted then
    local fresh_at_ms, value, at_text, same_fresh_at = impl.step(raw, policy, now_ms, cost, "reject", 0)
    if fresh_at_ms then
      fresh_ats[i], values[i], at_texts[i], sames[i] = fresh_at_ms, value, at_text, same_fresh_at
    else
      admitted = false
    end
  end
end
local head = "0 "
if admitted then
  head = "1 "
  for i = 1, n do write_until_fresh(KEYS[i], values[i], fresh_ats[i], sames[i], now_ms, slack_ms, at_texts[i]) end
end
if time then head = head .. time[1] .. " " .. time[2] .. " " end
return head .. concat(raws, "\n", 1, n)
