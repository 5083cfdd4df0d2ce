-- gcra.lua — Generic Cell Rate Algorithm (library: no KEYS, no ARGV).
-- Mirrors src/core/gcra.ts. State: { tatMs }. Emission interval T = periodMs / limit.

ALGORITHMS["gcra"] = {
  earliest = function(state, policy, now_ms, cost)
    if cost > policy.burst then return nil end
    local interval_ms = policy.periodMs / policy.limit
    local tat_ms = state and state.tatMs or now_ms
    return math.max(now_ms, tat_ms + cost * interval_ms - policy.burst * interval_ms)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    local interval_ms = policy.periodMs / policy.limit
    local tat_ms = state and state.tatMs or at_ms
    return { tatMs = math.max(tat_ms, at_ms) + cost * interval_ms }
  end,
  standing = function(state, policy, now_ms)
    if not state then return policy.burst, 0 end
    local interval_ms = policy.periodMs / policy.limit
    local backlog_ms = math.max(0, state.tatMs - now_ms)
    return floor_count(policy.burst - backlog_ms / interval_ms), backlog_ms
  end,
  fresh_at = function(state)
    return state.tatMs
  end,
  encode = function(state)
    return json_object({ { "tatMs", state.tatMs } })
  end,
}
