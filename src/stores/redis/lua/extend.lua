-- extend.lua — moves a held lease's expiry to now + leaseMs in every concurrency policy
-- of the stack, all-or-nothing.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  leaseId
-- ARGV[4+N]  leaseMs
-- Returns 1 when the lease was held and extended, else 0.
local ctx = read_context()
local lease_id = ARGV[ctx.nextArg]
local lease_ms = tonumber(ARGV[ctx.nextArg + 1])
-- All-or-nothing (KeyState.extend): if one policy refuses, no lease is extended.
local results = {}
for i, policy in ipairs(ctx.policies) do
  if policy.concurrency then
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
