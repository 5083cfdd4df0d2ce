-- credits.lua — a balance (library: no KEYS, no ARGV).
-- Mirrors src/core/credits.ts. State: { balance, windowStartMs } (the refill window it
-- belongs to, 0 without a refill; a later window than now's holds a reservation), stored as
-- "k:<balance>:<windowStartMs>". policy.bounds (the refill's calendar, common.lua) is nil
-- without a refill; policy.refillTo is what each refill sets the balance to.

local function refill_start_of(policy, time_ms)
  if not policy.bounds then return 0 end
  return calendar_start(policy, time_ms)
end

-- The balance at time_ms (balanceAt): limit for a key never seen, the refill's amount in a
-- later window than the state's, 0 while the state's window is still to come.
local function balance_at(state, policy, time_ms)
  if not state then return policy.limit end
  if not policy.bounds then return state.balance end
  local start_ms = refill_start_of(policy, time_ms)
  if state.windowStartMs < start_ms then return policy.refillTo end
  if state.windowStartMs > start_ms then return 0 end
  return state.balance
end

ALGORITHMS["credits"] = {
  tag = "k:",
  earliest = function(state, policy, now_ms, cost)
    local refill_to = policy.refillTo
    if state and policy.bounds and state.windowStartMs > refill_start_of(policy, now_ms) then
      if state.balance >= cost then return state.windowStartMs end
      if cost <= refill_to then return calendar_end(policy, state.windowStartMs) end
      return nil
    end
    if balance_at(state, policy, now_ms) >= cost then return now_ms end
    if not policy.bounds or cost > refill_to then return nil end
    return calendar_end(policy, now_ms)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    if not policy.bounds then
      local balance = policy.limit
      if state then balance = state.balance end
      return { balance = balance - cost, windowStartMs = 0 }
    end
    local start_ms = refill_start_of(policy, at_ms)
    if state and state.windowStartMs >= start_ms then
      return { balance = state.balance - cost, windowStartMs = state.windowStartMs }
    end
    local base = policy.refillTo
    if not state and start_ms == refill_start_of(policy, now_ms) then base = policy.limit end
    return { balance = base - cost, windowStartMs = start_ms }
  end,
  standing = function(state, policy, now_ms)
    local remaining = max(0, balance_at(state, policy, now_ms))
    if not state or not policy.bounds then return remaining, 0 end
    local start_ms = max(state.windowStartMs, refill_start_of(policy, now_ms))
    return remaining, calendar_end(policy, start_ms) - now_ms
  end,
  -- Not monotone (a balance topped up above refillTo falls back at the boundary): decide.lua
  -- asks again at a later slot another policy chose (fitsAt in src/core/algorithm.ts).
  fits_at = function(state, policy, now_ms, at_ms, cost)
    if not policy.bounds then
      local balance = policy.limit
      if state then balance = state.balance end
      return balance >= cost
    end
    local start_ms = refill_start_of(policy, at_ms)
    if state and state.windowStartMs >= start_ms then return state.balance >= cost end
    if not state and start_ms == refill_start_of(policy, now_ms) then return policy.limit >= cost end
    return policy.refillTo >= cost
  end,
  -- refund (src/core/credits.ts): back to the balance of the refill window the units were
  -- spent in (a later window was refilled: nothing to return there), at most 1e15.
  refund = function(state, policy, now_ms, amount, spent_ms)
    if policy.bounds then
      local at_ms = spent_ms
      if at_ms == nil then at_ms = max(now_ms, state.windowStartMs) end
      if state.windowStartMs ~= refill_start_of(policy, at_ms) then return state end
    end
    return { balance = min(1e15, state.balance + amount), windowStartMs = state.windowStartMs }
  end,
  fresh_at = function(state, policy)
    if not policy.bounds then
      if state.balance == policy.limit then return 0 end
      return NEVER_FRESH_MS
    end
    if policy.refillTo == policy.limit then return calendar_end(policy, state.windowStartMs) end
    return NEVER_FRESH_MS
  end,
  encode = function(state)
    return number2_text("k:%d:%d", "k:", state.balance, state.windowStartMs)
  end,
  decode = function(raw)
    local balance, start_ms = match(raw, "^k:([^:]+):([^:]+)$")
    return { balance = balance + 0, windowStartMs = start_ms + 0 }
  end,
}

-- A credits change at now_ms (changeCredits): "add" raises the balance as it stands now, "set"
-- sets it; both in now's refill window, or the later one a reservation holds.
local function change_credits(state, policy, now_ms, op, amount)
  local start_ms = refill_start_of(policy, now_ms)
  local window_start_ms = start_ms
  if state and state.windowStartMs > start_ms then window_start_ms = state.windowStartMs end
  if op == "set" then return { balance = amount, windowStartMs = window_start_ms } end
  local base
  if state and state.windowStartMs > start_ms then base = state.balance else base = balance_at(state, policy, now_ms) end
  return { balance = base + amount, windowStartMs = window_start_ms }
end
