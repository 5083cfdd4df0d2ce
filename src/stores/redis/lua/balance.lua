-- balance.lua — raises or sets the balance of a credits policy (POST /v1/credits) in one
-- atomic step: changeCredits in src/core/credits.ts.
-- KEYS[i]    state of policy i, i = 1 = N (one credits policy)
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"; either may
--            end in "@<deadlineMs>": past it the call raises LATE and changes nothing (read_clock)
-- ARGV[2]    N = 1
-- ARGV[2+i]  policy i: "credits <limit> <periodMs> <burst> <leaseMs> -[ <blockMs or -> <bounds or -> <refillTo>]"
-- ARGV[4]    "add" or "set"
-- ARGV[5]    the amount (an integer 0 … 1e15, checked by the caller)
-- Returns the balance after the change as a decision reports `remaining` (never below 0), or
-- "cap <balance now>" when the change would take the balance past MAX_BALANCE (1e15): nothing
-- is written. A balance equal to a fresh one is deleted; an add of 0 is a read and writes
-- nothing (KeyState.credits in src/core/key-state.ts).
local MAX_BALANCE = 1e15
local ctx = read_context()
local policy = ctx.policies[1]
if policy.algorithm ~= "credits" then error("spillway: balance.lua changes only credits policies") end
local arg = ctx.nextArg
local op, amount = ARGV[arg], ARGV[arg + 1] + 0
local live = live_state(ctx, 1)
local state = change_credits(live, policy, ctx.nowMs, op, amount)
if state.balance > MAX_BALANCE then
  local before = policy.impl.standing(live, policy, ctx.nowMs)
  return "cap " .. format("%d", floor_count(before))
end
if op == "add" and amount == 0 then
  -- A read: judged against no policy, so it cannot drop a balance that another one reads.
  return floor_count(policy.impl.standing(state, policy, ctx.nowMs))
end
if ctx.blocks[1] == nil and policy.impl.fresh_at(state, policy) <= ctx.nowMs then
  -- Equivalent to a key never seen (KeyState.credits drops it): deleted, on either clock.
  redis.call("DEL", KEYS[1])
else
  write_state(ctx, 1, state)
end
local remaining = policy.impl.standing(state, policy, ctx.nowMs)
return floor_count(remaining)
