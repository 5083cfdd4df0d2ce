-- decide.lua — the combiner of stacked policies (library: no KEYS, no ARGV).
-- Mirrors decide() in src/core/decision.ts line for line: the request is admitted at the
-- latest of each policy's earliest slot, or nothing is consumed at all.

-- A denied policy's own retry time; nil (null) when it can never be admitted.
local function policy_retry_after_ms(item, now_ms)
  if item.earliestMs == nil then return nil end
  return math.max(1, ceil_ms(item.earliestMs - now_ms))
end

local function denial_rank(result)
  if result.allowed then return -1 end
  if result.retryAfterMs == nil then return math.huge end
  return result.retryAfterMs
end

-- Denied: the policy that frees up last; allowed: the fewest remaining. Ties keep stack order.
local function most_restrictive(results, allowed)
  local top = results[1]
  for i = 2, #results do
    local result = results[i]
    if allowed then
      if result.remaining < top.remaining then top = result end
    elseif denial_rank(result) > denial_rank(top) then
      top = result
    end
  end
  return top
end

-- input: cost, mode, maxWaitMs, leaseId, leaseMs, queued (set of policy names with waiters).
-- Returns the decision and the new state of each admitted policy, by stack index.
local function decide(ctx, input)
  local now_ms = ctx.nowMs
  local probe_cost = input.cost
  if probe_cost == 0 then probe_cost = 1 end
  local evaluated = {}
  local never, blocked = false, false
  local at_ms = now_ms
  for i, policy in ipairs(ctx.policies) do
    local state = live_state(ctx, i)
    local earliest_ms = ALGORITHMS[policy.algorithm].earliest(state, policy, now_ms, probe_cost)
    local blocked_by_queue = input.queued[policy.name] == true
    evaluated[i] = { policy = policy, state = state, earliestMs = earliest_ms, blockedByQueue = blocked_by_queue }
    if earliest_ms == nil then never = true else at_ms = math.max(at_ms, earliest_ms) end
    if blocked_by_queue then blocked = true end
  end

  if at_ms - now_ms <= EPSILON_MS then at_ms = now_ms end
  local wait_ms = ceil_ms(at_ms - now_ms)
  -- The caller acts at now + waitMs (whole ms), so the request is recorded then, not at a
  -- fractional earliest moment: recording it earlier would let the next slot come too soon.
  local slot_ms = now_ms + wait_ms
  local fits_now = not never and not blocked and wait_ms == 0
  local fits_reserved = not never and not blocked and input.mode == "reserve" and wait_ms <= input.maxWaitMs
  -- A peek (cost 0) says whether a cost-1 request would be admitted now; it never reserves.
  local admit = input.cost > 0 and (fits_now or fits_reserved)
  local allowed = admit
  if input.cost == 0 then allowed = fits_now end

  local uses_lease = false
  local min_lease_ms = nil
  for _, policy in ipairs(ctx.policies) do
    if policy.algorithm == "concurrency" then
      if admit then uses_lease = true end
      min_lease_ms = math.min(min_lease_ms or policy.leaseMs, policy.leaseMs)
    end
  end
  if uses_lease and not input.leaseId then error("a leaseId is needed to admit a concurrency policy") end

  local changes, results = {}, {}
  for i, item in ipairs(evaluated) do
    local policy = item.policy
    local algorithm = ALGORITHMS[policy.algorithm]
    local state = item.state
    if admit then
      local lease = nil
      if policy.algorithm == "concurrency" then lease = { leaseId = input.leaseId, leaseMs = input.leaseMs } end
      state = algorithm.admit(state, policy, now_ms, slot_ms, input.cost, lease)
      changes[i] = state
    end
    local remaining, reset_ms = algorithm.standing(state, policy, now_ms)
    local allowed_alone = admit or (item.earliestMs ~= nil and item.earliestMs - now_ms <= EPSILON_MS and not item.blockedByQueue)
    local limit = policy.limit
    if policy.algorithm == "gcra" or policy.algorithm == "token-bucket" then limit = policy.burst end
    local retry_after_ms = 0
    if not allowed_alone then retry_after_ms = policy_retry_after_ms(item, now_ms) end
    results[i] = {
      policy = policy.name,
      allowed = allowed_alone,
      limit = limit,
      remaining = floor_count(remaining),
      resetMs = ceil_ms(reset_ms),
      retryAfterMs = retry_after_ms,
    }
  end

  local top = most_restrictive(results, allowed)
  local retry_after_ms = 0
  if not allowed then
    if never then
      retry_after_ms = nil
    else
      retry_after_ms = math.max(1, wait_ms)
      for _, result in ipairs(results) do retry_after_ms = math.max(retry_after_ms, result.retryAfterMs or 0) end
    end
  end
  local decision = {
    allowed = allowed,
    limit = top.limit,
    remaining = top.remaining,
    resetMs = top.resetMs,
    retryAfterMs = retry_after_ms,
    waitMs = admit and wait_ms or 0,
    policy = top.policy,
    policies = results,
  }
  if uses_lease then
    decision.leaseId = input.leaseId
    decision.leaseMs = input.leaseMs or min_lease_ms
  end
  return decision, changes
end

local function encode_policy_decision(result)
  return json_object({
    { "policy", result.policy }, { "allowed", result.allowed }, { "limit", result.limit },
    { "remaining", result.remaining }, { "resetMs", result.resetMs }, { "retryAfterMs", result.retryAfterMs },
  })
end

local function encode_decision(decision)
  local items = {}
  for i, result in ipairs(decision.policies) do items[i] = encode_policy_decision(result) end
  local fields = {
    { "allowed", decision.allowed }, { "limit", decision.limit }, { "remaining", decision.remaining },
    { "resetMs", decision.resetMs }, { "retryAfterMs", decision.retryAfterMs }, { "waitMs", decision.waitMs },
    { "policy", decision.policy }, { "policies", json_array(items), true },
  }
  if decision.leaseId then
    fields[#fields + 1] = { "leaseId", decision.leaseId }
    fields[#fields + 1] = { "leaseMs", decision.leaseMs }
  end
  return json_object(fields)
end
