-- context.lua — reads the arguments every entry script shares and the stored states
-- (library; the entry scripts list the full KEYS and ARGV).
--   KEYS[i] state of policy i, i = 1..N (string "<tag>:<fields>", see common.lua)
--   KEYS[N+1] waiter queue (zset waiterId -> arrival number), when the script touches it
--   KEYS[N+2] waiters (hash waiterId -> "expiresAtMs|policy,policy"), likewise
--   ARGV[1] clock: "" to read the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>";
--           either may end in "@<deadlineMs>" (read_clock)
--   ARGV[2] N, the number of policies
--   ARGV[2+i] policy i as "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>", then
--             " <blockMs>" when the policy has a block (a name has no spaces), and for a
--             calendar (a calendar window, a credits refill) or a credits refill amount
--             " <blockMs or -> <boundaries b0,b1,… or -> [<refillTo>]"; the name is
--             "-" but for concurrency policies (only waiters read it), so policies that
--             differ by name alone share one text and one parse
--   ARGV[3+N] the pub/sub channel that wakes waiters, only when the waiter keys are passed
-- Every argument and every reply element costs Redis time, which is why a policy is one
-- argument and the clock is one.

local MAX_TTL_MS = 1e15

-- stack.lua's working lists, kept by the library from call to call (see there).
local STACK_RAWS, STACK_FRESH_ATS, STACK_VALUES, STACK_AT_TEXTS, STACK_SAMES = {}, {}, {}, {}, {}

local function optional_number(value)
  if value == nil or value == "" then return nil end
  return tonumber(value)
end

local function optional_string(value)
  if value == nil or value == "" then return nil end
  return value
end

-- The clock of a call: now_ms, the expiry slack (nil for the server clock: its times are
-- Redis times, so keys expire exactly when their state becomes fresh), and TIME's answer
-- {seconds, microseconds} (nil for the client clock).
-- A clock may end in "@<deadlineMs>", a Redis time (src/stores/redis/server-clock.ts): the
-- caller stops waiting then, and a call that runs later (Redis was paused, stopped, or
-- behind) must change nothing, since its caller was told it failed (a spend, a top-up, a
-- debit: docs/limits.md). It raises LATE before anything is read or written.
local function read_clock(clock)
  local deadline_ms = nil
  local at = find(clock, "@", 1, true)
  if at then
    deadline_ms = sub(clock, at + 1) + 0
    clock = sub(clock, 1, at - 1)
  end
  local now_ms, slack_ms, time
  if clock == "" then
    time = redis.call("TIME")
    now_ms = time[1] * 1000 + floor(time[2] / 1000)
  else
    local now_text, slack_text = match(clock, "^([^:]+):(.+)$")
    now_ms, slack_ms = now_text + 0, slack_text + 0
  end
  if deadline_ms then
    local server_ms = now_ms
    if time == nil then
      local server = redis.call("TIME")
      server_ms = server[1] * 1000 + floor(server[2] / 1000)
    end
    if server_ms > deadline_ms then
      error({ err = format("LATE spillway: the call ran %d ms after its caller stopped waiting: nothing done", server_ms - deadline_ms) })
    end
  end
  return now_ms, slack_ms, time
end

-- Parsed policies by their argument text. As Redis Functions the library stays loaded, so
-- a policy is parsed on its first call and then found by its (interned) text; under EVALSHA
-- the table lives for one call. Bounded: a server that sees endless distinct policies
-- parses again now and then, nothing more.
local policy_cache, policy_cache_size = {}, 0
local POLICY_CACHE_MAX = 4096

-- The policy an argument describes (never modified by the scripts: it is shared).
local function policy_of(spec)
  local policy = policy_cache[spec]
  if policy then return policy end
  local algorithm, limit, period_ms, burst, lease_ms, name, block_ms, bounds_text, refill_to = match(spec, "^(%S+) (%S+) (%S+) (%S+) (%S+) (%S+) ?(%S*) ?(%S*) ?(%S*)$")
  if not algorithm then error("spillway: unreadable policy argument " .. spec) end
  local impl = ALGORITHMS[algorithm]
  if not impl then error("spillway: this script was not built for " .. algorithm) end
  policy = {
    name = name,
    algorithm = algorithm,
    limit = limit + 0,
    periodMs = period_ms + 0,
    burst = burst + 0,
    leaseMs = lease_ms + 0,
    -- nil: no block (src/core/types.ts Policy.blockMs).
    blockMs = optional_number(block_ms),
    concurrency = algorithm == "concurrency",
    impl = impl,
    -- nil: no calendar; else its boundaries around the caller's clock, ascending (common.lua).
    bounds = nil,
    -- credits: what each refill sets the balance to (src/core/types.ts Policy.refillTo).
    refillTo = optional_number(refill_to),
  }
  if bounds_text ~= nil and bounds_text ~= "" and bounds_text ~= "-" then
    local bounds = {}
    for bound in string.gmatch(bounds_text, "[^,]+") do bounds[#bounds + 1] = bound + 0 end
    if #bounds < 2 then error("spillway: unreadable calendar boundaries " .. spec) end
    policy.bounds = bounds
  end
  if algorithm == "credits" and policy.refillTo == nil then policy.refillTo = policy.limit end
  if policy_cache_size >= POLICY_CACHE_MAX then policy_cache, policy_cache_size = {}, 0 end
  policy_cache[spec] = policy
  policy_cache_size = policy_cache_size + 1
  return policy
end

-- The state stored for a policy when its own algorithm wrote it; nil when there is none or
-- another algorithm wrote it (the policy was redefined). Second, the end of the block stored
-- with it (policy `block`: "b:<blockedUntilMs>|<state>", see write_state), or nil. Anything
-- else raises (here, or as a Lua error in decode): a script error is never taken as "store
-- down, admit".
local function decode_stored(raw, policy, key)
  if not raw then return nil end
  local blocked_until_ms = nil
  if sub(raw, 1, 2) == "b:" then
    local until_text, state_text = match(raw, "^b:([^|]+)|(.+)$")
    if not until_text then error("spillway: unreadable state in " .. key) end
    blocked_until_ms, raw = until_text + 0, state_text
  end
  local algorithm = policy.impl
  if sub(raw, 1, 2) == algorithm.tag then
    local state = algorithm.decode(raw)
    if state then return state, blocked_until_ms end
  elseif find(raw, "^[gtfslck]:") then
    return nil
  end
  error("spillway: unreadable state in " .. key)
end

local function read_context()
  local now_ms, slack_ms = read_clock(ARGV[1])
  local count = ARGV[2] + 0
  local policies, stored, blocks = {}, {}, {}
  local has_waiters = #KEYS > count
  local ctx = {
    nowMs = now_ms,
    expirySlackMs = slack_ms,
    keys = KEYS,
    queueKey = KEYS[count + 1],
    waitersKey = KEYS[count + 2],
    channel = has_waiters and ARGV[3 + count] or nil,
    policies = policies,
    -- By stack index: the decoded state, or nil (see decode_stored).
    stored = stored,
    -- By stack index: the end of the policy's block while one holds the key (liveBlockMs in
    -- src/core/algorithms.ts), else nil; kept beside the state whenever it is written.
    blocks = blocks,
    hasConcurrency = false,
    -- Index of the entry script's own first argument.
    nextArg = has_waiters and 4 + count or 3 + count,
  }
  for i = 1, count do
    local policy = policy_of(ARGV[2 + i])
    if policy.concurrency then ctx.hasConcurrency = true end
    policies[i] = policy
    local state, blocked_until_ms = decode_stored(redis.call("GET", KEYS[i]), policy, KEYS[i])
    stored[i] = state
    if blocked_until_ms ~= nil and policy.blockMs ~= nil and blocked_until_ms > now_ms then blocks[i] = blocked_until_ms end
  end
  return ctx
end

-- A cost argument: one cost for every policy ("5"), or one per policy in stack order
-- ("1,800,0": CheckOptions.costs, a debit's costs, policyCosts in src/core/costs.ts).
-- Returns the one cost (for a list: 1 when some policy is charged, else 0, so a check of
-- costs all 0 peeks as cost 0 does) and the list (nil for one cost).
local function read_costs(text, count)
  if not find(text, ",", 1, true) then return text + 0, nil end
  local costs, charged = {}, 0
  for part in string.gmatch(text, "[^,]+") do
    local cost = part + 0
    costs[#costs + 1] = cost
    if cost > 0 then charged = 1 end
  end
  if #costs ~= count then error(format("spillway: %d costs for %d policies", #costs, count)) end
  return charged, costs
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
-- slack_ms is nil for the server clock. Times go to Redis as text printed with %d: a Lua
-- number argument costs Redis more (up to 7.0 it prints it with %.17g). at_text, when
-- given, is that text of ceil(fresh_at_ms) already (see encode in common.lua).
local function set_until_fresh(key, value, fresh_at_ms, now_ms, slack_ms, at_text)
  if fresh_at_ms >= NEVER_FRESH_MS then
    -- Never equivalent to fresh (a spent balance): kept without an expiry.
    redis.call("SET", key, value)
  elseif slack_ms == nil then
    -- Server clock: the state's own times are Redis times, so expire exactly then.
    local at_ms = ceil(fresh_at_ms)
    if at_ms <= now_ms then
      redis.call("DEL", key)
      return
    end
    if at_ms > now_ms + MAX_TTL_MS then at_ms, at_text = now_ms + MAX_TTL_MS, nil end
    redis.call("SET", key, value, "PXAT", at_text or format("%d", at_ms))
  else
    -- Client clock: times are the client's, so expire relative to now, plus a slack for
    -- clocks that drift apart; an expired-late key is harmless (live_state ignores it).
    local ttl_ms = min(max(1, ceil(fresh_at_ms - now_ms)) + ceil(slack_ms), MAX_TTL_MS)
    redis.call("SET", key, value, "PX", format("%d", ttl_ms))
  end
end

-- Whether a new state that becomes fresh when the stored one did may keep the key's expiry
-- (SET … KEEPTTL, which spares Redis the expiry update of SET … PXAT): with the server
-- clock every write sets the expiry to ceil(fresh_at) exactly (set_until_fresh), so the key
-- already expires then, unless that moment was beyond MAX_TTL_MS and cut short. With the
-- client clock expiries carry a slack that moves with each write, so they are set again.
local function keeps_expiry(fresh_at_ms, now_ms, slack_ms)
  return slack_ms == nil and ceil(fresh_at_ms) <= now_ms + MAX_TTL_MS
end

-- Writes value to key, to expire when its state becomes fresh. same_fresh_at: the state it
-- replaces was live and became fresh at that same moment, so the key may keep its expiry.
local function write_until_fresh(key, value, fresh_at_ms, same_fresh_at, now_ms, slack_ms, at_text)
  if same_fresh_at and keeps_expiry(fresh_at_ms, now_ms, slack_ms) then
    redis.call("SET", key, value, "KEEPTTL")
  else
    set_until_fresh(key, value, fresh_at_ms, now_ms, slack_ms, at_text)
  end
end

-- Writes policy i's new state. Each script writes a key once at most, so the stored state
-- read at the start is what the key holds, and its expiry is that state's.
local function write_state(ctx, i, state)
  local policy, stored = ctx.policies[i], ctx.stored[i]
  local algorithm = policy.impl
  local value, at_text = algorithm.encode(state)
  local fresh_at_ms = algorithm.fresh_at(state, policy)
  local blocked_until_ms = ctx.blocks[i]
  if blocked_until_ms ~= nil then
    -- The block is kept before the state, and the key lives until both are over.
    value = "b:" .. number_text(blocked_until_ms) .. "|" .. value
    if blocked_until_ms > fresh_at_ms then fresh_at_ms, at_text = blocked_until_ms, nil end
  end
  -- Live (not yet fresh at now) and fresh at that same moment: live_state's test, fresh_at once.
  -- (A key that held a block may expire later than its state: harmless, live_state ignores it.)
  local same_fresh_at = false
  if stored ~= nil and blocked_until_ms == nil then
    local stored_fresh_at_ms = algorithm.fresh_at(stored, policy)
    same_fresh_at = ctx.nowMs < stored_fresh_at_ms and fresh_at_ms == stored_fresh_at_ms
  end
  write_until_fresh(ctx.keys[i], value, fresh_at_ms, same_fresh_at, ctx.nowMs, ctx.expirySlackMs, at_text)
end

-- changes: the new state by stack index (nil where nothing changed), or nil.
local function write_changes(ctx, changes)
  if not changes then return end
  for i = 1, #ctx.policies do
    local state = changes[i]
    if state then write_state(ctx, i, state) end
  end
end
