-- sliding-window.lua — weighted two-window counter (library: no KEYS, no ARGV).
-- Mirrors src/core/sliding-window.ts. State: { windowStartMs, prevCount, currCount },
-- stored as "s:<windowStartMs>:<prevCount>:<currCount>"; the estimate at t is
-- prev * (1 - elapsed/period) + curr. The helpers pass a window as three numbers
-- (start, prev, curr) rather than a table: every table costs Redis time on each decision.

local function sliding_window_start(time_ms, period_ms)
  return floor(time_ms / period_ms) * period_ms
end

-- The window that holds time_ms, as start, prev, curr (never moves a future window back).
local function sliding_roll_to(start_ms, prev_count, curr_count, period_ms, time_ms)
  local at_start_ms = sliding_window_start(time_ms, period_ms)
  if at_start_ms <= start_ms then return start_ms, prev_count, curr_count end
  if at_start_ms == start_ms + period_ms then return at_start_ms, curr_count, 0 end
  return at_start_ms, 0, 0
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

-- earliestMs for a live state (start, prev, curr) and cost ≤ limit.
local function sliding_earliest(start_ms, prev_count, curr_count, policy, now_ms, cost)
  local limit, period_ms = policy.limit, policy.periodMs
  local from_ms = max(now_ms, start_ms)
  start_ms, prev_count, curr_count = sliding_roll_to(start_ms, prev_count, curr_count, period_ms, from_ms)
  if curr_count + cost > limit then
    -- Only the next window can take it, once this window's weight has decayed enough.
    local fraction = 1 - (limit - cost) / curr_count
    return start_ms + period_ms + fraction * period_ms
  end
  if sliding_estimate(start_ms, prev_count, curr_count, period_ms, from_ms) + cost <= limit + 1e-9 then return from_ms end
  local fraction = 1 - (limit - cost - curr_count) / prev_count
  return max(from_ms, start_ms + fraction * period_ms)
end

local function sliding_state(start_ms, prev_count, curr_count)
  return { windowStartMs = start_ms, prevCount = prev_count, currCount = curr_count }
end

local function sliding_decode(raw)
  local start_ms, prev_count, curr_count = match(raw, "^s:([^:]+):([^:]+):([^:]+)$")
  return start_ms + 0, prev_count + 0, curr_count + 0
end

ALGORITHMS["sliding-window"] = {
  tag = "s:",
  earliest = function(state, policy, now_ms, cost)
    if cost > policy.limit then return nil end
    if not state then return now_ms end
    return sliding_earliest(state.windowStartMs, state.prevCount, state.currCount, policy, now_ms, cost)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    if not state then return sliding_state(sliding_window_start(at_ms, policy.periodMs), 0, cost) end
    local start_ms, prev_count, curr_count = sliding_roll_to(state.windowStartMs, state.prevCount, state.currCount, policy.periodMs, at_ms)
    return sliding_state(start_ms, prev_count, curr_count + cost)
  end,
  standing = function(state, policy, now_ms)
    if not state then return policy.limit, 0 end
    local period_ms = policy.periodMs
    local start_ms, prev_count, curr_count = sliding_roll_to(state.windowStartMs, state.prevCount, state.currCount, period_ms, now_ms)
    local remaining = 0
    if now_ms >= start_ms then
      remaining = floor_count(policy.limit - sliding_estimate(start_ms, prev_count, curr_count, period_ms, now_ms))
    end
    return remaining, max(0, sliding_window_fresh_at(start_ms, prev_count, curr_count, period_ms) - now_ms)
  end,
  -- The usual request in one call (single.lua): raw, the stored text, is this algorithm's or
  -- false (none); cost ≥ 1. Answers the new state's fresh_at, its stored text, nil (no
  -- expiry text) and whether the stored state was live with that same fresh_at (a count
  -- going up within its window), or nil when not admitted: decode, fresh_at, earliest,
  -- admit and encode on three numbers, no table.
  step = function(raw, policy, now_ms, cost, mode, max_wait_ms)
    local period_ms = policy.periodMs
    local live, start_ms, prev_count, curr_count, stored_fresh_at_ms = false, 0, 0, 0, nil
    if raw then
      start_ms, prev_count, curr_count = sliding_decode(raw)
      stored_fresh_at_ms = sliding_window_fresh_at(start_ms, prev_count, curr_count, period_ms)
      live = now_ms < stored_fresh_at_ms
    end
    if cost > policy.limit then return nil end
    local at_ms = now_ms
    if live then
      local earliest_ms = sliding_earliest(start_ms, prev_count, curr_count, policy, now_ms, cost)
      if earliest_ms - now_ms > EPSILON_MS then
        local wait_ms = ceil_ms(earliest_ms - now_ms)
        if mode ~= "reserve" or wait_ms > max_wait_ms then return nil end
        at_ms = now_ms + wait_ms
      end
      start_ms, prev_count, curr_count = sliding_roll_to(start_ms, prev_count, curr_count, period_ms, at_ms)
    else
      start_ms, prev_count, curr_count = sliding_window_start(at_ms, period_ms), 0, 0
    end
    curr_count = curr_count + cost
    local fresh_at_ms = sliding_window_fresh_at(start_ms, prev_count, curr_count, period_ms)
    return fresh_at_ms, number3_text("s:%d:%d:%d", "s:", start_ms, prev_count, curr_count), nil, live and fresh_at_ms == stored_fresh_at_ms
  end,
  -- refund (src/core/sliding-window.ts): from the count of the window the units were spent in
  -- (the current one without a time), current or previous, floored at 0.
  refund = function(state, policy, now_ms, amount, spent_ms)
    local period_ms = policy.periodMs
    local start_ms, prev_count, curr_count = sliding_roll_to(state.windowStartMs, state.prevCount, state.currCount, period_ms, now_ms)
    local spent_start_ms = start_ms
    if spent_ms ~= nil then spent_start_ms = sliding_window_start(spent_ms, period_ms) end
    if spent_start_ms == start_ms then return sliding_state(start_ms, prev_count, max(0, curr_count - amount)) end
    if spent_start_ms == start_ms - period_ms then return sliding_state(start_ms, max(0, prev_count - amount), curr_count) end
    return sliding_state(start_ms, prev_count, curr_count)
  end,
  fresh_at = function(state, policy)
    return sliding_window_fresh_at(state.windowStartMs, state.prevCount, state.currCount, policy.periodMs)
  end,
  encode = function(state)
    return number3_text("s:%d:%d:%d", "s:", state.windowStartMs, state.prevCount, state.currCount)
  end,
  decode = function(raw)
    return sliding_state(sliding_decode(raw))
  end,
}
