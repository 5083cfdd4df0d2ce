-- sliding-window.lua — weighted two-window counter (library: no KEYS, no ARGV).
-- Mirrors src/core/sliding-window.ts. State: { windowStartMs, prevCount, currCount },
-- stored as "s:<windowStartMs>:<prevCount>:<currCount>"; the estimate at t is
-- prev * (1 - elapsed/period) + curr.

local function sliding_window_start(time_ms, period_ms)
  return floor(time_ms / period_ms) * period_ms
end

-- The state as seen from the window that holds time_ms (never moves a future window back).
local function sliding_roll_to(state, period_ms, time_ms)
  local start_ms = sliding_window_start(time_ms, period_ms)
  if start_ms <= state.windowStartMs then return state end
  if start_ms == state.windowStartMs + period_ms then
    return { windowStartMs = start_ms, prevCount = state.currCount, currCount = 0 }
  end
  return { windowStartMs = start_ms, prevCount = 0, currCount = 0 }
end

local function sliding_estimate(state, period_ms, time_ms)
  local elapsed = min(1, max(0, (time_ms - state.windowStartMs) / period_ms))
  return state.prevCount * (1 - elapsed) + state.currCount
end

local function sliding_fresh_at(state, policy)
  if state.currCount > 0 then return state.windowStartMs + 2 * policy.periodMs end
  if state.prevCount > 0 then return state.windowStartMs + policy.periodMs end
  return state.windowStartMs
end

ALGORITHMS["sliding-window"] = {
  tag = "s:",
  earliest = function(state, policy, now_ms, cost)
    if cost > policy.limit then return nil end
    if not state then return now_ms end
    local limit, period_ms = policy.limit, policy.periodMs
    local from_ms = max(now_ms, state.windowStartMs)
    local rolled = sliding_roll_to(state, period_ms, from_ms)
    if rolled.currCount + cost > limit then
      -- Only the next window can take it, once this window's weight has decayed enough.
      local fraction = 1 - (limit - cost) / rolled.currCount
      return rolled.windowStartMs + period_ms + fraction * period_ms
    end
    if sliding_estimate(rolled, period_ms, from_ms) + cost <= limit + 1e-9 then return from_ms end
    local fraction = 1 - (limit - cost - rolled.currCount) / rolled.prevCount
    return max(from_ms, rolled.windowStartMs + fraction * period_ms)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    local start = state or { windowStartMs = sliding_window_start(at_ms, policy.periodMs), prevCount = 0, currCount = 0 }
    local rolled = sliding_roll_to(start, policy.periodMs, at_ms)
    return { windowStartMs = rolled.windowStartMs, prevCount = rolled.prevCount, currCount = rolled.currCount + cost }
  end,
  standing = function(state, policy, now_ms)
    if not state then return policy.limit, 0 end
    local rolled = sliding_roll_to(state, policy.periodMs, now_ms)
    local remaining = 0
    if now_ms >= rolled.windowStartMs then
      remaining = floor_count(policy.limit - sliding_estimate(rolled, policy.periodMs, now_ms))
    end
    return remaining, max(0, sliding_fresh_at(rolled, policy) - now_ms)
  end,
  fresh_at = sliding_fresh_at,
  encode = function(state)
    return number3_text("s:%d:%d:%d", "s:", state.windowStartMs, state.prevCount, state.currCount)
  end,
  decode = function(raw)
    local start_ms, prev_count, curr_count = match(raw, "^s:([^:]+):([^:]+):([^:]+)$")
    return { windowStartMs = start_ms + 0, prevCount = prev_count + 0, currCount = curr_count + 0 }
  end,
}
