-- reset.lua — forgets the state of every policy of the stack and wakes the head waiter.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset)
-- KEYS[N+2]  waiters of the user key (hash)
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  pub/sub channel that wakes waiters
-- Returns 1.
local ctx = read_context()
for i = 1, #ctx.policies do redis.call("DEL", ctx.keys[i]) end
prune_waiters(ctx)
wake_head(ctx)
return 1
