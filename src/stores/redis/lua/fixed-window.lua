-- fixed-window.lua — epoch-aligned fixed window (library: no KEYS, no ARGV).
-- Mirrors src/core/fixed-window.ts (with a calendar: windows from policy.bounds). State: { windowStartMs, count } (the window may be a
-- future one holding reservations), stored as "f:<windowStartMs>:<count>".

local function fixed_window_start(time_ms, period_ms)
  return floor(time_ms / period_ms) * period_ms
end

-- A window's start and end, for a policy with or without a calendar (fixedWindowStartOf and
-- fixedWindowEndOf in src/core/fixed-window.ts; calendar windows: common.lua).
local function window_start_of(policy, time_ms)
  if policy.bounds then return calendar_start(policy, time_ms) end
  return fixed_window_start(time_ms, policy.periodMs)
end

local function window_end_of(policy, start_ms)
  if policy.bounds then return calendar_end(policy, start_ms) end
  return start_ms + policy.periodMs
end

ALGORITHMS["fixed-window"] = {
  tag = "f:",
  earliest = function(state, policy, now_ms, cost)
    if cost > policy.limit then return nil end
    if not state or state.windowStartMs < window_start_of(policy, now_ms) then return now_ms end
    if state.count + cost <= policy.limit then return max(now_ms, state.windowStartMs) end
    return window_end_of(policy, state.windowStartMs)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    local window_start_ms = window_start_of(policy, at_ms)
    if not state or state.windowStartMs < window_start_ms then
      return { windowStartMs = window_start_ms, count = cost }
    end
    return { windowStartMs = state.windowStartMs, count = state.count + cost }
  end,
  standing = function(state, policy, now_ms)
    local current_start_ms = window_start_of(policy, now_ms)
    if not state or state.windowStartMs < current_start_ms then return policy.limit, 0 end
    local reset_ms = window_end_of(policy, state.windowStartMs) - now_ms
    if state.windowStartMs > current_start_ms then return 0, reset_ms end
    return max(0, policy.limit - state.count), reset_ms
  end,
  -- The usual request in one call (single.lua): raw, the stored text, is this algorithm's or
  -- false (none); cost >= 1. Answers the new state's fresh_at, its stored text, nil (no expiry
  -- text) and whether the stored state was live with that same fresh_at (a count going up in
  -- its window: the key keeps its expiry), or nil when not admitted. decode, fresh_at,
  -- earliest, admit and encode (admit_one's order) on two numbers, no table. Not for a
  -- calendar window (policy.bounds): those take the long way.
  step = function(raw, policy, now_ms, cost, mode, max_wait_ms)
    local period_ms, limit = policy.periodMs, policy.limit
    local live, start_ms, count = false, 0, 0
    if raw then
      local start_text, count_text = match(raw, "^f:([^:]+):([^:]+)$")
      -- Raises on an unreadable state (nil + 0): a store fault, never an answer.
      start_ms, count = start_text + 0, count_text + 0
      live = now_ms < start_ms + period_ms
    end
    if cost > limit then return nil end
    local earliest_ms = now_ms
    if live and start_ms >= fixed_window_start(now_ms, period_ms) then
      if count + cost <= limit then earliest_ms = max(now_ms, start_ms) else earliest_ms = start_ms + period_ms end
    end
    local at_ms = now_ms
    if earliest_ms - now_ms > EPSILON_MS then
      local wait_ms = ceil_ms(earliest_ms - now_ms)
      if mode ~= "reserve" or wait_ms > max_wait_ms then return nil end
      at_ms = now_ms + wait_ms
    end
    local window_start_ms = fixed_window_start(at_ms, period_ms)
    local same_window = live and start_ms >= window_start_ms
    if same_window then count = count + cost else start_ms, count = window_start_ms, cost end
    return start_ms + period_ms, number2_text("f:%d:%d", "f:", start_ms, count), nil, same_window
  end,
  -- refund (src/core/fixed-window.ts): only to the window the units were spent in, while it
  -- is current or still to come; the count floors at 0. Answers the state itself when unchanged.
  refund = function(state, policy, now_ms, amount, spent_ms)
    if state.windowStartMs < window_start_of(policy, now_ms) then return state end
    if spent_ms ~= nil and window_start_of(policy, spent_ms) ~= state.windowStartMs then return state end
    return { windowStartMs = state.windowStartMs, count = max(0, state.count - amount) }
  end,
  fresh_at = function(state, policy)
    return window_end_of(policy, state.windowStartMs)
  end,
  encode = function(state)
    return number2_text("f:%d:%d", "f:", state.windowStartMs, state.count)
  end,
  decode = function(raw)
    local start_ms, count = match(raw, "^f:([^:]+):([^:]+)$")
    return { windowStartMs = start_ms + 0, count = count + 0 }
  end,
}
