-- leave.lua — a waiter gives up (its maxWaitMs ran out).
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset)
-- KEYS[N+2]  waiters of the user key (hash)
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  pub/sub channel that wakes waiters
-- ARGV[4+N]  waiterId
-- Returns retryAfterMs, an integer: until the next held lease expires, at least 1.
local ctx = read_context()
local waiter_id = ARGV[ctx.nextArg]
prune_waiters(ctx)
local rank = redis.call("ZRANK", ctx.queueKey, waiter_id)
if rank then
  remove_waiter(ctx, waiter_id)
  -- The one that left may have been the head blocking the others.
  if rank == 0 then wake_head(ctx) end
end
return lease_retry_after_ms(ctx)
