-- acquire.lua — one attempt of a waiter to take a lease from every concurrency policy
-- of the stack, FIFO: a newcomer only tries when nobody waits, a queued waiter only
-- when it is the head.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset)
-- KEYS[N+2]  waiters of the user key (hash)
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  pub/sub channel that wakes waiters
-- ARGV[4+N]  waiterId, which becomes the lease id
-- ARGV[5+N]  leaseMs override, or ""
-- ARGV[6+N]  "1" to join the queue when no lease is free, "0" to answer at once
-- ARGV[7+N]  waiterTtlMs: the waiter is dropped when it has not polled for this long
-- Returns an array of integers (decodeAcquireAttempt in src/stores/redis/codec.ts):
--   {1, stack index of the top policy, remaining} acquired
--   | {0, retryAfterMs or -1 (null)} denied
--   | {2, ms until the next held lease expires, or -1 (none)} queued
local ctx = read_context()
local arg = ctx.nextArg
local waiter_id = ARGV[arg]
local lease_ms = optional_number(ARGV[arg + 1])
local may_wait = ARGV[arg + 2] == "1"
local ttl_ms = tonumber(ARGV[arg + 3])

local function try_acquire()
  local decision, changes = decide(ctx, 1, "reject", 0, waiter_id, lease_ms, nil)
  write_changes(ctx, changes)
  if decision[1] ~= 0 then return nil, decision[1] end
  local top, remaining = top_remaining(decision)
  return { 1, top, remaining }
end

local function denied(retry_after_ms)
  return { 0, retry_after_ms }
end

local function queued()
  local next_expiry_ms = next_lease_expiry_ms(ctx)
  if next_expiry_ms == nil then return { 2, -1 } end
  return { 2, ceil(next_expiry_ms - ctx.nowMs) }
end

prune_waiters(ctx)
if not redis.call("ZSCORE", ctx.queueKey, waiter_id) then
  if redis.call("ZCARD", ctx.queueKey) == 0 then
    local acquired, retry_after_ms = try_acquire()
    if acquired then return acquired end
    if not may_wait then return denied(retry_after_ms) end
  elseif not may_wait then
    return denied(lease_retry_after_ms(ctx))
  end
  enqueue_waiter(ctx, waiter_id, ttl_ms)
  return queued()
end

touch_waiter(ctx, waiter_id, ttl_ms)
if head_waiter(ctx) == waiter_id then
  local acquired = try_acquire()
  if acquired then
    remove_waiter(ctx, waiter_id)
    -- The next waiter may fit too (several leases freed at once): let it try.
    wake_head(ctx)
    return acquired
  end
end
return queued()
