-- token-bucket.lua — discrete-refill token bucket (library: no KEYS, no ARGV).
-- Mirrors src/core/token-bucket.ts. State: { tokens, anchorMs }, stored as
-- "t:<tokens>:<anchorMs>"; `limit` tokens are added on the grid anchorMs + k*periodMs,
-- up to `burst`.

local function ticks_until(tokens, needed, limit)
  return max(0, ceil((needed - tokens) / limit))
end

local function token_bucket_fresh_at(state, policy)
  return state.anchorMs + ticks_until(state.tokens, policy.burst, policy.limit) * policy.periodMs
end

ALGORITHMS["token-bucket"] = {
  tag = "t:",
  earliest = function(state, policy, now_ms, cost)
    if cost > policy.burst then return nil end
    if not state then return now_ms end
    local refill_at_ms = state.anchorMs + ticks_until(state.tokens, cost, policy.limit) * policy.periodMs
    return max(now_ms, refill_at_ms)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    local start = state or { tokens = policy.burst, anchorMs = at_ms }
    local ticks = max(0, floor((at_ms - start.anchorMs) / policy.periodMs))
    local tokens = min(policy.burst, start.tokens + ticks * policy.limit)
    return { tokens = tokens - cost, anchorMs = start.anchorMs + ticks * policy.periodMs }
  end,
  standing = function(state, policy, now_ms)
    if not state then return policy.burst, 0 end
    local full_at_ms = token_bucket_fresh_at(state, policy)
    if now_ms < state.anchorMs then return 0, full_at_ms - now_ms end
    local ticks = floor((now_ms - state.anchorMs) / policy.periodMs)
    local tokens = min(policy.burst, state.tokens + ticks * policy.limit)
    return floor_count(tokens), max(0, full_at_ms - now_ms)
  end,
  -- refund (src/core/token-bucket.ts): refilled up to now, then amount back, up to burst.
  refund = function(state, policy, now_ms, amount)
    local ticks = max(0, floor((now_ms - state.anchorMs) / policy.periodMs))
    local tokens = min(policy.burst, state.tokens + ticks * policy.limit)
    return { tokens = min(policy.burst, tokens + amount), anchorMs = state.anchorMs + ticks * policy.periodMs }
  end,
  fresh_at = token_bucket_fresh_at,
  encode = function(state)
    return number2_text("t:%d:%d", "t:", state.tokens, state.anchorMs)
  end,
  decode = function(raw)
    local tokens, anchor_ms = match(raw, "^t:([^:]+):([^:]+)$")
    return { tokens = tokens + 0, anchorMs = anchor_ms + 0 }
  end,
}
