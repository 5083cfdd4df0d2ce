-- waiters.lua — FIFO waiters for concurrency leases, one queue per user key (library).
-- Mirrors src/stores/lease-queue.ts across processes: a newcomer never passes a waiter,
-- only the head may take a lease, and checks may not pass a policy somebody waits for.
-- ctx.queueKey (KEYS[N+1]): zset waiterId -> arrival number; ctx.waitersKey (KEYS[N+2]):
-- hash waiterId -> "expiresAtMs|name,name" (the concurrency policies it waits for);
-- ctx.channel (ARGV[3+N]): the pub/sub channel that wakes them. A waiter refreshes expiresAtMs each time it
-- polls, so a crashed process's waiters drop out on their own.

-- Drops expired waiters; returns the set of policy names live waiters wait for.
local function prune_waiters(ctx)
  local flat = redis.call("HGETALL", ctx.waitersKey)
  local queued = {}
  for i = 1, #flat, 2 do
    local waiter_id, meta = flat[i], flat[i + 1]
    local separator = string.find(meta, "|", 1, true)
    if tonumber(string.sub(meta, 1, separator - 1)) <= ctx.nowMs then
      redis.call("HDEL", ctx.waitersKey, waiter_id)
      redis.call("ZREM", ctx.queueKey, waiter_id)
    else
      for name in string.gmatch(string.sub(meta, separator + 1), "[^,]+") do queued[name] = true end
    end
  end
  return queued
end

local function head_waiter(ctx)
  while true do
    local head = redis.call("ZRANGE", ctx.queueKey, 0, 0)[1]
    if not head then return nil end
    if redis.call("HEXISTS", ctx.waitersKey, head) == 1 then return head end
    redis.call("ZREM", ctx.queueKey, head) -- its record expired on its own
  end
end

-- Tells the process that holds the head waiter to try now (it also polls, in case the
-- message is lost, e.g. while its subscriber reconnects).
local function wake_head(ctx)
  local head = head_waiter(ctx)
  if head then redis.call("PUBLISH", ctx.channel, head) end
end

local function waiter_meta(ctx, ttl_ms)
  local names = {}
  for _, policy in ipairs(ctx.policies) do
    if policy.concurrency then names[#names + 1] = policy.name end
  end
  return int_arg(ctx.nowMs + ttl_ms) .. "|" .. table.concat(names, ",")
end

local function touch_waiter(ctx, waiter_id, ttl_ms)
  redis.call("HSET", ctx.waitersKey, waiter_id, waiter_meta(ctx, ttl_ms))
  -- The queue itself goes away once every waiter in it has stopped polling.
  redis.call("PEXPIRE", ctx.waitersKey, int_arg(2 * ttl_ms))
  redis.call("PEXPIRE", ctx.queueKey, int_arg(2 * ttl_ms))
end

local function enqueue_waiter(ctx, waiter_id, ttl_ms)
  local last = redis.call("ZRANGE", ctx.queueKey, -1, -1, "WITHSCORES")
  local arrival = 1
  if last[2] then arrival = tonumber(last[2]) + 1 end
  redis.call("ZADD", ctx.queueKey, int_arg(arrival), waiter_id)
  touch_waiter(ctx, waiter_id, ttl_ms)
end

local function remove_waiter(ctx, waiter_id)
  redis.call("ZREM", ctx.queueKey, waiter_id)
  redis.call("HDEL", ctx.waitersKey, waiter_id)
end

-- When the next held lease of the stack's concurrency policies expires (nil: none held).
local function next_lease_expiry_ms(ctx)
  local next_ms = nil
  for i, policy in ipairs(ctx.policies) do
    local state = ctx.stored[i]
    if policy.concurrency and state then
      for _, entry in ipairs(state.entries) do
        if entry[1] > ctx.nowMs then next_ms = min(next_ms or entry[1], entry[1]) end
      end
    end
  end
  return next_ms
end

-- LeaseQueue.retryAfterMs: until the next lease expires, at least 1 ms.
local function lease_retry_after_ms(ctx)
  local expiry_ms = next_lease_expiry_ms(ctx)
  if expiry_ms == nil then return 1 end
  return max(1, ceil(expiry_ms - ctx.nowMs))
end
