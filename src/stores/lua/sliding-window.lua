-- sliding-window.lua — weighted two-window counter (library: no KEYS, no ARGV).
-- Mirrors src/core/sliding-window.ts. State: { windowStartMs, prevCount, currCount },
-- stored as "s:<windowStartMs>:<prevCount>:<currCount>"; the estimate at t is
-- prev * (1 - elapsed/period) + curr. The helpers pass a window as three numbers
-- (start, prev, curr) rather than a table: every table costs Redis time on each decision.

local function sliding_window_start(time_ms, period_ms)
  return floor(time_ms / period_ms) * period_ms
end

-- The state as seen from the window that holds time_ms, as start, prev, curr (never moves
-- a future window back).
local function sliding_roll_to(state, period_ms, time_ms)
  local start_ms = sliding_window_start(time_ms, period_ms)
  local state_start_ms = state.windowStartMs
  if start_ms <= state_start_ms then return state_start_ms, state.prevCount, state.currCount end
  if start_ms == state_start_ms + period_ms then return start_ms, state.currCount, 0 end
  return start_ms, 0, 0
end

local function sliding_estimate(start_ms, prev_count, curr_count, period_ms, time_ms)
  -- min(1, max(0, elapsed)), spelled out.
  local elapsed = (time_ms - start_ms) / period_ms
  if elapsed > 1 then elapsed = 1 elseif elapsed < 0 then elapsed = 0 end
  return prev_count * (1 - elapsed) + curr_count
end

local function sliding_window_fresh_at(start_ms, prev_count, curr_count, period_ms)
  if curr_count > 0 then return start_ms + 2 * period_ms end
  if prev_count > 0 then return start_ms + period_ms end
  return start_ms
end

ALGORITHMS["sliding-window"] = {
  tag = "s:",
  earliest = function(state, policy, now_ms, cost)
    local limit = policy.limit
    if cost > limit then return nil end
    if not state then return now_ms end
    local period_ms = policy.periodMs
    local from_ms = max(now_ms, state.windowStartMs)
    local start_ms, prev_count, curr_count = sliding_roll_to(state, period_ms, from_ms)
    if curr_count + cost > limit then
      -- Only the next window can take it, once this window's weight has decayed enough.
      local fraction = 1 - (limit - cost) / curr_count
      return start_ms + period_ms + fraction * period_ms
    end
    if sliding_estimate(start_ms, prev_count, curr_count, period_ms, from_ms) + cost <= limit + 1e-9 then return from_ms end
    local fraction = 1 - (limit - cost - curr_count) / prev_count
    return max(from_ms, start_ms + fraction * period_ms)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    if not state then return { windowStartMs = sliding_window_start(at_ms, policy.periodMs), prevCount = 0, currCount = cost } end
    local start_ms, prev_count, curr_count = sliding_roll_to(state, policy.periodMs, at_ms)
    return { windowStartMs = start_ms, prevCount = prev_count, currCount = curr_count + cost }
  end,
  standing = function(state, policy, now_ms)
    if not state then return policy.limit, 0 end
    local period_ms = policy.periodMs
    local start_ms, prev_count, curr_count = sliding_roll_to(state, period_ms, now_ms)
    local remaining = 0
    if now_ms >= start_ms then
      remaining = floor_count(policy.limit - sliding_estimate(start_ms, prev_count, curr_count, period_ms, now_ms))
    end
    return remaining, max(0, sliding_window_fresh_at(start_ms, prev_count, curr_count, period_ms) - now_ms)
  end,
  fresh_at = function(state, policy)
    return sliding_window_fresh_at(state.windowStartMs, state.prevCount, state.currCount, policy.periodMs)
  end,
  encode = function(state)
    return number3_text("s:%d:%d:%d", "s:", state.windowStartMs, state.prevCount, state.currCount)
  end,
  decode = function(raw)
    local start_ms, prev_count, curr_count = match(raw, "^s:([^:]+):([^:]+):([^:]+)$")
    return { windowStartMs = start_ms + 0, prevCount = prev_count + 0, currCount = curr_count + 0 }
  end,
}
