-- gcra.lua — Generic Cell Rate Algorithm (library: no KEYS, no ARGV).
-- Mirrors src/core/gcra.ts. State: { tatMs }, stored as "g:<tatMs>". Emission interval
-- T = periodMs / limit. The backlog is counted in whole units of 1/limit ms
-- (tat - now = units / limit), so fractional intervals never accumulate rounding error.

-- max(0, Math.round((tat - now) * limit)). Math.round is spelled out: the nearest integer,
-- ties towards +infinity (floor(x + 0.5) is not the same: 0.49999999999999994 + 0.5 rounds
-- up to 1 in floating point).
local function gcra_backlog_units(state, policy, now_ms)
  if not state then return 0 end
  local units = (state.tatMs - now_ms) * policy.limit
  local whole = floor(units)
  if units - whole >= 0.5 then whole = whole + 1 end
  if whole < 0 then return 0 end
  return whole
end

ALGORITHMS["gcra"] = {
  tag = "g:",
  earliest = function(state, policy, now_ms, cost)
    if cost > policy.burst then return nil end
    local wait_units = gcra_backlog_units(state, policy, now_ms) + (cost - policy.burst) * policy.periodMs
    return now_ms + max(0, wait_units) / policy.limit
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    -- max(tat, at) + cost*T, rebuilt from the slot so rounding never accumulates.
    return { tatMs = at_ms + (gcra_backlog_units(state, policy, at_ms) + cost * policy.periodMs) / policy.limit }
  end,
  standing = function(state, policy, now_ms)
    local units = gcra_backlog_units(state, policy, now_ms)
    return floor_count((policy.burst * policy.periodMs - units) / policy.periodMs), units / policy.limit
  end,
  fresh_at = function(state)
    return state.tatMs
  end,
  encode = function(state)
    return number1_text("g:%d", "g:", state.tatMs)
  end,
  decode = function(raw)
    return { tatMs = sub(raw, 3) + 0 }
  end,
}
