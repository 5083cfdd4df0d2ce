-- extend.lua — moves a held lease's expiry to now + leaseMs in every concurrency policy
-- of the stack, all-or-nothing.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- ARGV[1]    nowMs, or "" for the Redis server clock (TIME)
-- ARGV[2]    client-clock expiry slack ms, or "" (server clock: PXAT at freshAtMs)
-- ARGV[3]    pub/sub channel that wakes waiters
-- ARGV[4]    N, the number of policies
-- ARGV[5..4+6N]  per policy: name, algorithm, limit, periodMs, burst, leaseMs
-- ARGV[5+6N] leaseId
-- ARGV[6+6N] leaseMs
-- Returns 1 when the lease was held and extended, else 0.
local ctx = read_context()
local lease_id = ARGV[ctx.nextArg]
local lease_ms = tonumber(ARGV[ctx.nextArg + 1])
-- All-or-nothing (KeyState.extend): if one policy refuses, no lease is extended.
local results = {}
for i, policy in ipairs(ctx.policies) do
  if policy.algorithm == "concurrency" then
    local next_state, was_held, refused = extend_lease(ctx.stored[i], lease_id, ctx.nowMs, lease_ms, policy.limit)
    if refused then return 0 end
    results[#results + 1] = { index = i, state = next_state, extended = was_held }
  end
end
local extended = false
for _, result in ipairs(results) do
  if result.extended then
    extended = true
    write_state(ctx, result.index, result.state)
  end
end
return extended and 1 or 0
