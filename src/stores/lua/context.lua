-- context.lua — reads the arguments every entry script shares and the stored states
-- (library; the entry scripts list the full KEYS and ARGV).
--   KEYS[i] state of policy i, i = 1..N (string "<tag>:<fields>", see common.lua)
--   KEYS[N+1] waiter queue (zset waiterId -> arrival number), when the script touches it
--   KEYS[N+2] waiters (hash waiterId -> "expiresAtMs|policy,policy"), likewise
--   ARGV[1] nowMs, or "" to read the Redis server clock (TIME)
--   ARGV[2] client-clock expiry slack in ms, or "" for server clock (PXAT at freshAtMs)
--   ARGV[3] pub/sub channel that wakes waiters
--   ARGV[4] N, the number of policies
--   ARGV[5 .. 4+6N] per policy: name, algorithm, limit, periodMs, burst, leaseMs

local MAX_TTL_MS = 1e15

local function optional_number(value)
  if value == nil or value == "" then return nil end
  return tonumber(value)
end

local function optional_string(value)
  if value == nil or value == "" then return nil end
  return value
end

-- The state stored for a policy when its own algorithm wrote it; nil when there is none or
-- another algorithm wrote it (the policy was redefined). Anything else raises (here, or as
-- a Lua error in decode): a script error is never taken as "store down, admit".
local function decode_stored(raw, policy)
  if not raw then return nil end
  local algorithm = policy.impl
  if sub(raw, 1, 2) == algorithm.tag then
    local state = algorithm.decode(raw)
    if state then return state end
  elseif string.byte(raw) == 123 then
    -- "{": the JSON {"algorithm":..,"state":..} of Spillway 0.1, read during an upgrade.
    local stored = cjson.decode(raw)
    if stored.algorithm == policy.algorithm then return stored.state end
    return nil
  elseif find(raw, "^[gtfslc]:") then
    return nil
  end
  error("spillway: unreadable state in " .. policy.key)
end

local function read_context()
  local now_ms = ARGV[1]
  if now_ms == "" then
    local time = redis.call("TIME")
    now_ms = time[1] * 1000 + floor(time[2] / 1000)
  else
    now_ms = now_ms + 0
  end
  local count = ARGV[4] + 0
  local policies, stored = {}, {}
  local ctx = {
    nowMs = now_ms,
    expirySlackMs = optional_number(ARGV[2]),
    queueKey = KEYS[count + 1],
    waitersKey = KEYS[count + 2],
    policies = policies,
    -- By stack index: the decoded state, or nil (see decode_stored).
    stored = stored,
    hasConcurrency = false,
    -- Index of the entry script's own first argument.
    nextArg = 5 + 6 * count,
  }
  local arg = 5
  for i = 1, count do
    local algorithm = ARGV[arg + 1]
    local impl = ALGORITHMS[algorithm]
    if not impl then error("spillway: this script was not built for " .. algorithm) end
    local policy = {
      name = ARGV[arg],
      algorithm = algorithm,
      limit = ARGV[arg + 2] + 0,
      periodMs = ARGV[arg + 3] + 0,
      burst = ARGV[arg + 4] + 0,
      -- Only concurrency uses it: converting it for the others would be wasted time.
      leaseMs = 0,
      key = KEYS[i],
      impl = impl,
    }
    if algorithm == "concurrency" then
      policy.leaseMs = ARGV[arg + 5] + 0
      ctx.hasConcurrency = true
    end
    policies[i] = policy
    stored[i] = decode_stored(redis.call("GET", policy.key), policy)
    arg = arg + 6
  end
  return ctx
end

-- The live state of policy i at nowMs (liveState): nil when absent, written by another
-- algorithm, or already equivalent to fresh.
local function live_state(ctx, i)
  local state = ctx.stored[i]
  if state == nil then return nil end
  local policy = ctx.policies[i]
  if ctx.nowMs >= policy.impl.fresh_at(state, policy) then return nil end
  return state
end

-- Writes a value that expires when the state becomes fresh again (SET PXAT: Redis >= 6.2).
local function set_until_fresh(ctx, key, value, fresh_at_ms)
  if ctx.expirySlackMs == nil then
    -- Server clock: the state's own times are Redis times, so expire exactly then.
    local at_ms = min(ceil(fresh_at_ms), ctx.nowMs + MAX_TTL_MS)
    if at_ms <= ctx.nowMs then
      redis.call("DEL", key)
      return
    end
    redis.call("SET", key, value, "PXAT", format("%d", at_ms))
  else
    -- Client clock: times are the client's, so expire relative to now, plus a slack for
    -- clocks that drift apart; an expired-late key is harmless (live_state ignores it).
    local ttl_ms = min(max(1, ceil(fresh_at_ms - ctx.nowMs)) + ctx.expirySlackMs, MAX_TTL_MS)
    redis.call("SET", key, value, "PX", int_arg(ttl_ms))
  end
end

local function write_state(ctx, i, state)
  local policy = ctx.policies[i]
  set_until_fresh(ctx, policy.key, policy.impl.encode(state), policy.impl.fresh_at(state, policy))
end

-- changes: the new state by stack index (nil where nothing changed), or nil.
local function write_changes(ctx, changes)
  if not changes then return end
  for i = 1, #ctx.policies do
    local state = changes[i]
    if state then write_state(ctx, i, state) end
  end
end
