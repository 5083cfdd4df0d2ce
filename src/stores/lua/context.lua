-- context.lua — reads the arguments every entry script shares and the stored states
-- (library; the entry scripts list the full KEYS and ARGV).
--   KEYS[1] waiter queue (zset waiterId -> arrival number)
--   KEYS[2] waiters (hash waiterId -> "expiresAtMs|policy,policy")
--   KEYS[2+i] state of policy i (string: {"algorithm":..,"state":..}, the core's StoredState)
--   ARGV[1] nowMs, or "" to read the Redis server clock (TIME)
--   ARGV[2] client-clock expiry slack in ms, or "" for server clock (PEXPIREAT at freshAtMs)
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

local function read_context()
  local now_ms = optional_number(ARGV[1])
  if now_ms == nil then
    -- Redis < 5 replicates scripts verbatim and refuses TIME before a write without this.
    if redis.replicate_commands then redis.replicate_commands() end
    local time = redis.call("TIME")
    now_ms = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
  end
  local ctx = {
    nowMs = now_ms,
    expirySlackMs = optional_number(ARGV[2]),
    channel = ARGV[3],
    queueKey = KEYS[1],
    waitersKey = KEYS[2],
    policies = {},
    stored = {},
  }
  local count = tonumber(ARGV[4])
  local arg = 5
  for i = 1, count do
    ctx.policies[i] = {
      name = ARGV[arg],
      algorithm = ARGV[arg + 1],
      limit = tonumber(ARGV[arg + 2]),
      periodMs = tonumber(ARGV[arg + 3]),
      burst = tonumber(ARGV[arg + 4]),
      leaseMs = tonumber(ARGV[arg + 5]),
      key = KEYS[2 + i],
    }
    local raw = redis.call("GET", KEYS[2 + i])
    -- A corrupt state raises here: a script error is never taken as "store down, admit".
    if raw then ctx.stored[i] = cjson.decode(raw) end
    arg = arg + 6
  end
  ctx.nextArg = arg
  return ctx
end

-- The live state of policy i at nowMs (liveState): nil when absent, written by another
-- algorithm, or already equivalent to fresh.
local function live_state(ctx, i)
  local stored, policy = ctx.stored[i], ctx.policies[i]
  if not stored or stored.algorithm ~= policy.algorithm then return nil end
  if ctx.nowMs >= ALGORITHMS[policy.algorithm].fresh_at(stored.state, policy) then return nil end
  return stored.state
end

-- Writes a value that expires when the state becomes fresh again.
local function set_until_fresh(ctx, key, value, fresh_at_ms)
  if ctx.expirySlackMs == nil then
    -- Server clock: the state's own times are Redis times, so expire exactly then.
    local at_ms = math.min(math.ceil(fresh_at_ms), ctx.nowMs + MAX_TTL_MS)
    if at_ms <= ctx.nowMs then
      redis.call("DEL", key)
      return
    end
    redis.call("SET", key, value)
    redis.call("PEXPIREAT", key, int_arg(at_ms))
  else
    -- Client clock: times are the client's, so expire relative to now, plus a slack for
    -- clocks that drift apart; an expired-late key is harmless (live_state ignores it).
    local ttl_ms = math.min(math.max(1, math.ceil(fresh_at_ms - ctx.nowMs)) + ctx.expirySlackMs, MAX_TTL_MS)
    redis.call("SET", key, value, "PX", int_arg(ttl_ms))
  end
end

local function write_state(ctx, i, state)
  local policy = ctx.policies[i]
  local algorithm = ALGORITHMS[policy.algorithm]
  local value = json_object({ { "algorithm", policy.algorithm }, { "state", algorithm.encode(state), true } })
  set_until_fresh(ctx, policy.key, value, algorithm.fresh_at(state, policy))
end

local function write_changes(ctx, changes)
  for i, state in pairs(changes) do write_state(ctx, i, state) end
end
