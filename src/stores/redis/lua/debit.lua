-- debit.lua — consumes a cost from every policy of a stack even past its limit, or returns one
-- (a refund: a negative cost), in one atomic step (debit() in src/core/debit.ts), and answers
-- the state after it as a peek sees it.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"; either may
--            end in "@<deadlineMs>": past it the call raises LATE and changes nothing (read_clock)
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>[ <blockMs>]"
-- then: cost (−1e9 … 1e9; 0 only peeks; negative: a refund), or one such per policy joined
--       by commas in stack order ("0,-200,350": each policy debited, refunded or left alone)
-- then, optional: spentMs, when a refund's units were spent: "<ms>" in the clock's time, or
--            "~<ms>" that long before now (the server clock: the caller's own clock is not
--            Redis's), or ""
-- Returns the whole decision as one string of integers (decide.lua).
-- Each algorithm's own admit at now records the debit: GCRA's tat moves on, a token bucket
-- goes negative, a window counts past its limit, a sliding log adds to its bucket's entry.
-- A debit that overdraws a policy with a block (the cost did not fit now) starts the block.
-- A refund is each algorithm's own refund (never below empty, never above capacity, only to
-- the window the units were spent in); a block under way stays.
local ctx = read_context()
if ctx.hasConcurrency then error("spillway: debit.lua debits no concurrency policy") end
local cost, costs = read_costs(ARGV[ctx.nextArg], #ctx.policies)
local now_ms = ctx.nowMs
local spent_text = ARGV[ctx.nextArg + 1]
local spent_ms
if spent_text ~= nil and string.sub(spent_text, 1, 1) == "~" then
  spent_ms = now_ms - tonumber(string.sub(spent_text, 2))
else
  spent_ms = optional_number(spent_text)
end
for i = 1, #ctx.policies do
  local policy = ctx.policies[i]
  -- Each policy its own cost when given a list (a settle of several measures), else the one cost.
  local own = cost
  if costs then own = costs[i] end
  if own > 0 then
    local live = live_state(ctx, i)
    if policy.blockMs ~= nil and ctx.blocks[i] == nil then
      local earliest_ms = policy.impl.earliest(live, policy, now_ms, own)
      if earliest_ms == nil or earliest_ms - now_ms > EPSILON_MS then ctx.blocks[i] = now_ms + policy.blockMs end
    end
    local state = policy.impl.admit(live, policy, now_ms, now_ms, own)
    write_state(ctx, i, state)
    -- What the key holds now: the peek below reads it.
    ctx.stored[i] = state
  elseif own < 0 then
    local live = live_state(ctx, i)
    if live ~= nil then
      local state = policy.impl.refund(live, policy, now_ms, -own, spent_ms)
      if state ~= live then
        local fresh_at_ms = policy.impl.fresh_at(state, policy)
        if ctx.blocks[i] ~= nil and ctx.blocks[i] > fresh_at_ms then fresh_at_ms = ctx.blocks[i] end
        if fresh_at_ms <= now_ms then
          -- Left fresh (and no block under way): dropped, as the core drops it, whichever the clock.
          redis.call("DEL", ctx.keys[i])
          ctx.stored[i] = nil
        else
          write_state(ctx, i, state)
          ctx.stored[i] = state
        end
      end
    end
  end
end
return decision_text((decide(ctx, 0, "peek", 0, nil, nil, nil)))
