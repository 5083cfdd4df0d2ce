-- fixed-window.lua — epoch-aligned fixed window (library: no KEYS, no ARGV).
-- Mirrors src/core/fixed-window.ts. State: { windowStartMs, count } (the window may be a
-- future one holding reservations), stored as "f:<windowStartMs>:<count>".

local function fixed_window_start(time_ms, period_ms)
  return floor(time_ms / period_ms) * period_ms
end

ALGORITHMS["fixed-window"] = {
  tag = "f:",
  earliest = function(state, policy, now_ms, cost)
    if cost > policy.limit then return nil end
    if not state or state.windowStartMs < fixed_window_start(now_ms, policy.periodMs) then return now_ms end
    if state.count + cost <= policy.limit then return max(now_ms, state.windowStartMs) end
    return state.windowStartMs + policy.periodMs
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    local window_start_ms = fixed_window_start(at_ms, policy.periodMs)
    if not state or state.windowStartMs < window_start_ms then
      return { windowStartMs = window_start_ms, count = cost }
    end
    return { windowStartMs = state.windowStartMs, count = state.count + cost }
  end,
  standing = function(state, policy, now_ms)
    local current_start_ms = fixed_window_start(now_ms, policy.periodMs)
    if not state or state.windowStartMs < current_start_ms then return policy.limit, 0 end
    local reset_ms = state.windowStartMs + policy.periodMs - now_ms
    if state.windowStartMs > current_start_ms then return 0, reset_ms end
    return max(0, policy.limit - state.count), reset_ms
  end,
  fresh_at = function(state, policy)
    return state.windowStartMs + policy.periodMs
  end,
  encode = function(state)
    return number2_text("f:%d:%d", "f:", state.windowStartMs, state.count)
  end,
  decode = function(raw)
    local start_ms, count = match(raw, "^f:([^:]+):([^:]+)$")
    return { windowStartMs = start_ms + 0, count = count + 0 }
  end,
}
