-- decide.lua — the combiner of stacked policies (library: no KEYS, no ARGV).
-- Mirrors decide() in src/core/decision.ts line for line: the request is admitted at the
-- latest of each policy's earliest slot, or nothing is consumed at all.
--
-- The decision is a flat array of whole numbers (null is -1), sent to the caller as one
-- string of them separated by spaces and rebuilt by decodeDecision() in
-- src/stores/redis/codec.ts: one bulk string costs Redis a fraction of what an array of
-- integer replies does. Nothing TypeScript can tell by itself is sent:
--   [1] retryAfterMs (0: allowed, -1: null)  [2] waitMs  [3] stack index of the top policy
--   [4] leaseMs, or -1 when no lease was taken
--   [5 + 3(i-1) ..] per policy i: remaining, resetMs, retryAfterMs (0: allowed, -1: null)
--   then, per policy i that a block holds (policy `block`): i, blockedMs (rare: only then)
-- `allowed` is retryAfterMs == 0 (a denial waits at least 1 ms, or forever); `limit` is the
-- policy's; the top level's limit, remaining and resetMs are the top policy's.
local DECISION_HEADER = 4
local POLICY_FIELDS = 3

-- A result's rank when denied (mostRestrictive): the one that frees up last, never first.
local function denial_rank(out, i)
  local retry_after_ms = out[DECISION_HEADER + POLICY_FIELDS * (i - 1) + 3]
  if retry_after_ms == 0 then return -1 end
  if retry_after_ms == -1 then return math.huge end
  return retry_after_ms
end

-- Denied: the policy that frees up last; allowed: the fewest remaining. Ties keep stack order.
local function most_restrictive(out, count, allowed)
  local top = 1
  for i = 2, count do
    if allowed then
      if out[DECISION_HEADER + POLICY_FIELDS * (i - 1) + 1] < out[DECISION_HEADER + POLICY_FIELDS * (top - 1) + 1] then top = i end
    elseif denial_rank(out, i) > denial_rank(out, top) then
      top = i
    end
  end
  return top
end

-- The stack index of the top policy and its remaining, from a decision array.
local function top_remaining(out)
  return out[3], out[DECISION_HEADER + POLICY_FIELDS * (out[3] - 1) + 1]
end

-- The request: cost, mode ("reject", "reserve", or "peek": a reject that only reports and
-- never starts a block), max_wait_ms, lease_id and lease_ms (or nil), queued (the set of
-- policy names with waiters; nil: nobody waits), costs (one per policy, CheckOptions.costs:
-- then cost is 1 when some policy is charged, else 0; nil: every policy costs `cost`).
-- Returns the decision array and the new state of every policy to write by stack index:
-- every one charged when admitted, those whose block a denial started otherwise (nil: none).
local function decide(ctx, cost, mode, max_wait_ms, lease_id, lease_ms, queued, costs)
  local now_ms, policies, blocks = ctx.nowMs, ctx.policies, ctx.blocks
  local count = #policies
  -- What a policy is probed at: its cost, or 1 for a peek (cost 0). With costs, each its own
  -- (no table built for the usual call: every table costs Redis time).
  local probe_cost = cost
  if probe_cost == 0 then probe_cost = 1 end
  -- By stack index: live state (nil), earliest slot (false: never), blocked by waiters.
  local states, earliest = {}, {}
  local blocked_by_queue = queued and {}
  local never, blocked = false, false
  local at_ms = now_ms
  for i = 1, count do
    local policy = policies[i]
    local state = live_state(ctx, i)
    local probe = probe_cost
    if costs then
      probe = costs[i]
      if probe == 0 then probe = 1 end
    end
    local earliest_ms = policy.impl.earliest(state, policy, now_ms, probe)
    -- No sooner than the end of the policy's block (blockedEarliestMs).
    local blocked_until_ms = blocks[i]
    if earliest_ms ~= nil and blocked_until_ms ~= nil and blocked_until_ms > earliest_ms then earliest_ms = blocked_until_ms end
    states[i], earliest[i] = state, earliest_ms or false
    if earliest_ms == nil then never = true elseif earliest_ms > at_ms then at_ms = earliest_ms end
    -- Only a concurrency policy has waiters (a redefined policy of the same name has none).
    if queued and policy.concurrency and queued[policy.name] == true then
      blocked_by_queue[i] = true
      blocked = true
    end
  end

  if at_ms - now_ms <= EPSILON_MS then at_ms = now_ms end
  local wait_ms = ceil_ms(at_ms - now_ms)
  -- The caller acts at now + waitMs (whole ms), so the request is recorded then, not at a
  -- fractional earliest moment: recording it earlier would let the next slot come too soon.
  local slot_ms = now_ms + wait_ms
  local fits_now = not never and not blocked and wait_ms == 0
  local fits_reserved = not never and not blocked and mode == "reserve" and wait_ms <= max_wait_ms
  -- A peek (cost 0) says whether a cost-1 request would be admitted now; it never reserves.
  local admit = cost > 0 and (fits_now or fits_reserved)
  if admit and slot_ms > now_ms then
    -- An algorithm that is not monotone (credits: fits_at) may not fit at a later slot another
    -- policy chose: then no slot fits both (fitsSlot in src/core/decision.ts).
    for i = 1, count do
      local fits_at = policies[i].impl.fits_at
      local own = cost
      if costs then
        own = costs[i]
        if own == 0 then own = 1 end
      end
      if fits_at and not fits_at(states[i] or nil, policies[i], now_ms, slot_ms, own) then
        earliest[i] = false
        never = true
      end
    end
    if never then admit = false end
  end
  local allowed = admit
  if cost == 0 then allowed = fits_now end

  local granted_lease_ms = -1
  -- A concurrency policy peeked (its cost 0) takes no lease.
  local leases = ctx.hasConcurrency
  if costs and leases then
    leases = false
    for i = 1, count do
      if policies[i].concurrency and costs[i] > 0 then leases = true end
    end
  end
  if admit and leases then
    if not lease_id then error("a leaseId is needed to admit a concurrency policy") end
    granted_lease_ms = lease_ms
    -- No override: the shortest lease of the concurrency policies (stackLeaseMs in src/core/concurrency.ts).
    if granted_lease_ms == nil then
      for _, policy in ipairs(policies) do
        if policy.concurrency then granted_lease_ms = min(granted_lease_ms or policy.leaseMs, policy.leaseMs) end
      end
    end
  end

  -- Sized for one policy; a stack grows it once.
  local out = { 0, 0, 0, 0, 0, 0, 0 }
  local retry_after_ms = max(1, wait_ms)
  local blocked_fields, blocked_changes = nil, nil
  for i = 1, count do
    local policy = policies[i]
    local algorithm = policy.impl
    local state = states[i]
    local earliest_ms = earliest[i]
    if admit then
      local own = cost
      if costs then own = costs[i] end
      if own > 0 then
        local lease = nil
        if policy.concurrency then lease = { leaseId = lease_id, leaseMs = lease_ms } end
        state = algorithm.admit(state, policy, now_ms, slot_ms, own, lease)
        states[i] = state
      else
        -- Peeked (its cost 0): nothing consumed, nothing written.
        states[i] = false
      end
    elseif not allowed and mode ~= "peek" and policy.blockMs ~= nil and blocks[i] == nil and state ~= nil
      and earliest_ms ~= false and earliest_ms - now_ms > EPSILON_MS then
      -- This policy refused the request: its block starts now (startsBlock; a peek only reports).
      local blocked_until_ms = now_ms + policy.blockMs
      blocks[i] = blocked_until_ms
      if blocked_until_ms > earliest_ms then earliest_ms = blocked_until_ms end
      blocked_changes = blocked_changes or {}
      blocked_changes[i] = state
    end
    local remaining, reset_ms = algorithm.standing(state, policy, now_ms)
    local allowed_alone = admit or (earliest_ms ~= false and earliest_ms - now_ms <= EPSILON_MS and not (blocked_by_queue and blocked_by_queue[i]))
    local policy_retry_after_ms = 0
    if not allowed_alone then
      -- A denied policy's own retry time; a queue ahead of it counts as at least 1 ms.
      if earliest_ms == false then policy_retry_after_ms = -1 else policy_retry_after_ms = max(1, ceil_ms(earliest_ms - now_ms)) end
    end
    if policy_retry_after_ms > retry_after_ms then retry_after_ms = policy_retry_after_ms end
    local base = DECISION_HEADER + POLICY_FIELDS * (i - 1)
    out[base + 1] = floor_count(remaining)
    out[base + 2] = ceil_ms(reset_ms)
    out[base + 3] = policy_retry_after_ms
    if blocks[i] ~= nil then
      -- Blocked: nothing would pass now, and the key is not fresh before the block ends.
      local blocked_ms = ceil_ms(blocks[i] - now_ms)
      out[base + 1] = 0
      if blocked_ms > out[base + 2] then out[base + 2] = blocked_ms end
      blocked_fields = blocked_fields or {}
      blocked_fields[#blocked_fields + 1] = i
      blocked_fields[#blocked_fields + 1] = blocked_ms
    end
  end

  if allowed then retry_after_ms = 0 elseif never then retry_after_ms = -1 end
  out[1] = retry_after_ms
  out[2] = admit and wait_ms or 0
  out[3] = most_restrictive(out, count, allowed)
  out[4] = granted_lease_ms
  if blocked_fields then
    local last = DECISION_HEADER + POLICY_FIELDS * count
    for j = 1, #blocked_fields do out[last + j] = blocked_fields[j] end
  end
  return out, admit and states or blocked_changes
end

-- The decision array as the text the caller reads: whole numbers as digits, and the rare
-- one beyond 2^53 (a GCRA backlog of 1e9 requests of a 366 d period is 3e19 ms, more than
-- an int64) as number_text writes it.
local function decision_text(out)
  local parts = {}
  for j = 1, #out do parts[j] = number_text(out[j]) end
  return table.concat(parts, " ")
end

-- Admission alone for a stack of one policy without leases, the usual request: whether
-- decide() would admit it and, if so, the policy's new state (else nil). Redis runs one
-- script at a time, so single.lua leaves the rest of the decision (remaining, reset,
-- retry times) to the caller, which computes it with src/core from the same stored state
-- and clock (decodeSingleDecision in src/stores/redis/codec.ts), and checks that it agrees.
local function admit_one(policy, state, now_ms, cost, mode, max_wait_ms)
  -- A peek (cost 0) never admits.
  if cost == 0 then return nil end
  local algorithm = policy.impl
  local earliest_ms = algorithm.earliest(state, policy, now_ms, cost)
  if earliest_ms == nil then return nil end
  local wait_ms = 0
  if earliest_ms - now_ms > EPSILON_MS then
    wait_ms = ceil_ms(earliest_ms - now_ms)
    if mode ~= "reserve" or wait_ms > max_wait_ms then return nil end
  end
  return algorithm.admit(state, policy, now_ms, now_ms + wait_ms, cost)
end
