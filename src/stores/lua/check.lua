-- check.lua — decides one request (check, reserve or peek) against a stack of policies
-- on one key, all-or-nothing, in one atomic step.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset), only when the stack has a concurrency policy
-- KEYS[N+2]  waiters of the user key (hash), likewise
-- ARGV[1]    nowMs, or "" for the Redis server clock (TIME)
-- ARGV[2]    client-clock expiry slack ms, or "" (server clock: PXAT at freshAtMs)
-- ARGV[3]    pub/sub channel that wakes waiters
-- ARGV[4]    N, the number of policies
-- ARGV[5..4+6N]  per policy: name, algorithm, limit, periodMs, burst, leaseMs
-- ARGV[5+6N] cost (0 peeks)
-- ARGV[6+6N] mode: "reject" or "reserve"
-- ARGV[7+6N] maxWaitMs (reserve)
-- ARGV[8+6N] leaseId for concurrency policies, or "" or absent (no concurrency policy)
-- ARGV[9+6N] leaseMs override, or "" or absent
-- Returns the decision as a flat array of integers (decide.lua).
-- The waiter keys are touched only when the stack has a concurrency policy (the script
-- then holds waiters.lua): only those have waiters. Each key costs Redis time.
local ctx = read_context()
local arg = ctx.nextArg
local mode = ARGV[arg + 1]
local max_wait_ms = 0
if mode == "reserve" then max_wait_ms = ARGV[arg + 2] + 0 end
local queued, lease_id, lease_ms = nil, nil, nil
if ctx.hasConcurrency then
  -- Checks may not pass a concurrency policy that somebody waits for (FIFO).
  queued = prune_waiters(ctx)
  lease_id, lease_ms = optional_string(ARGV[arg + 3]), optional_number(ARGV[arg + 4])
end
local decision, changes = decide(ctx, ARGV[arg] + 0, mode, max_wait_ms, lease_id, lease_ms, queued)
write_changes(ctx, changes)
return decision
