-- release.lua — releases a lease from every concurrency policy of the stack and wakes
-- the head waiter.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset)
-- KEYS[N+2]  waiters of the user key (hash)
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  pub/sub channel that wakes waiters
-- ARGV[4+N]  leaseId
-- Returns 1 when the lease was held (and is released now), else 0.
local ctx = read_context()
local lease_id = ARGV[ctx.nextArg]
local released = false
for i, policy in ipairs(ctx.policies) do
  if policy.concurrency then
    local next_state, was_held = release_lease(ctx.stored[i], lease_id, ctx.nowMs)
    released = released or was_held
    if #next_state.entries > 0 then write_state(ctx, i, next_state) else redis.call("DEL", ctx.keys[i]) end
  end
end
if released then
  prune_waiters(ctx)
  wake_head(ctx)
end
return released and 1 or 0
