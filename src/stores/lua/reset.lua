-- reset.lua — forgets the state of every policy of the stack and wakes the head waiter.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset)
-- KEYS[N+2]  waiters of the user key (hash)
-- ARGV[1]    nowMs, or "" for the Redis server clock (TIME)
-- ARGV[2]    client-clock expiry slack ms, or "" (server clock: PXAT at freshAtMs)
-- ARGV[3]    pub/sub channel that wakes waiters
-- ARGV[4]    N, the number of policies
-- ARGV[5..4+6N]  per policy: name, algorithm, limit, periodMs, burst, leaseMs
-- Returns 1.
local ctx = read_context()
for _, policy in ipairs(ctx.policies) do redis.call("DEL", policy.key) end
prune_waiters(ctx)
wake_head(ctx)
return 1
