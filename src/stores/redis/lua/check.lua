-- check.lua — decides one request (check, reserve or peek) against a stack of policies
-- on one key, all-or-nothing, in one atomic step.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset), only when the stack has a concurrency policy
-- KEYS[N+2]  waiters of the user key (hash), likewise
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"; either may
--            end in "@<deadlineMs>": past it the call raises LATE and changes nothing (read_clock)
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  pub/sub channel that wakes waiters, only with the waiter keys
-- then: cost (0 peeks), or one cost per policy joined by commas ("1,800,0": CheckOptions.costs,
--       0 peeks that policy); mode, "reject" (or absent), "reserve", or "peek" (Limiter.peek: a
--       cost-0 reject that never starts a block); maxWaitMs (reserve);
--       leaseId for concurrency policies; leaseMs override, or "" or absent
-- Returns the whole decision as one string of integers (decide.lua).
-- A stack of one policy without leases, the usual request, goes to single.lua instead.
-- The waiter keys are passed only when the stack has a concurrency policy (the script
-- then holds waiters.lua): only those have waiters. Each key costs Redis time.
local ctx = read_context()
local arg = ctx.nextArg
local mode = ARGV[arg + 1] or "reject"
local max_wait_ms = 0
if mode == "reserve" then max_wait_ms = ARGV[arg + 2] + 0 end
local queued, lease_id, lease_ms = nil, nil, nil
if ctx.hasConcurrency then
  -- Checks may not pass a concurrency policy that somebody waits for (FIFO).
  queued = prune_waiters(ctx)
  lease_id, lease_ms = optional_string(ARGV[arg + 3]), optional_number(ARGV[arg + 4])
end
local cost, costs = read_costs(ARGV[arg], #ctx.policies)
local decision, changes = decide(ctx, cost, mode, max_wait_ms, lease_id, lease_ms, queued, costs)
write_changes(ctx, changes)
return decision_text(decision)
