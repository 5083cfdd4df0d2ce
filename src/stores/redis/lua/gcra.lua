-- gcra.lua — Generic Cell Rate Algorithm (library: no KEYS, no ARGV).
-- Mirrors src/core/gcra.ts, whose state is { tatMs }. Here the state is the number tatMs
-- itself (a table per decode and per admit would cost Redis time on the hottest path), and
-- it is stored as "g:<tatMs>". Emission interval T = periodMs / limit. The backlog is
-- counted in whole units of 1/limit ms (tat - now = units / limit), so fractional
-- intervals never accumulate rounding error.

-- max(0, Math.round((tat - now) * limit)). Math.round is spelled out: the nearest integer,
-- ties towards +infinity (floor(x + 0.5) is not the same: 0.49999999999999994 + 0.5 rounds
-- up to 1 in floating point).
local function gcra_backlog_units(tat_ms, policy, now_ms)
  if not tat_ms then return 0 end
  local units = (tat_ms - now_ms) * policy.limit
  local whole = floor(units)
  if units - whole >= 0.5 then whole = whole + 1 end
  if whole < 0 then return 0 end
  return whole
end

-- The stored text of a tat. Whole numbers, the usual case, in one format call; their digits
-- are also the expiry time (fresh_at is tat), which spares set_until_fresh a second format.
local function gcra_encode(tat_ms)
  if tat_ms % 1 == 0 and tat_ms < MAX_SAFE_INTEGER and tat_ms > -MAX_SAFE_INTEGER then
    local value = format("g:%d", tat_ms)
    return value, sub(value, 3)
  end
  return "g:" .. number_text(tat_ms)
end

ALGORITHMS["gcra"] = {
  tag = "g:",
  earliest = function(tat_ms, policy, now_ms, cost)
    if cost > policy.burst then return nil end
    local wait_units = gcra_backlog_units(tat_ms, policy, now_ms) + (cost - policy.burst) * policy.periodMs
    if wait_units <= 0 then return now_ms end
    return now_ms + wait_units / policy.limit
  end,
  admit = function(tat_ms, policy, now_ms, at_ms, cost)
    -- max(tat, at) + cost*T, rebuilt from the slot so rounding never accumulates.
    return at_ms + (gcra_backlog_units(tat_ms, policy, at_ms) + cost * policy.periodMs) / policy.limit
  end,
  standing = function(tat_ms, policy, now_ms)
    local units = gcra_backlog_units(tat_ms, policy, now_ms)
    return floor_count((policy.burst * policy.periodMs - units) / policy.periodMs), units / policy.limit
  end,
  -- The usual request in one call (single.lua): raw, the stored text, is this algorithm's
  -- or false (none); cost ≥ 1. Answers the new tat (also its fresh_at), its stored text and
  -- the %d text of its expiry (nil when not whole), or nil when not admitted; never "same
  -- fresh_at" (see sliding-window.lua): each admission moves tat on. decode, fresh_at,
  -- earliest, admit and encode fused, with the backlog at now computed once; the
  -- differential test holds it to src/core like the rest.
  step = function(raw, policy, now_ms, cost, mode, max_wait_ms)
    local limit, period_ms, burst = policy.limit, policy.periodMs, policy.burst
    local tat_ms, units = nil, 0
    if raw then
      -- Raises on an unreadable state (a store fault, never an answer).
      tat_ms = sub(raw, 3) + 0
      -- A state fresh at now counts as none (fresh_at is tat itself).
      if now_ms >= tat_ms then tat_ms = nil else units = gcra_backlog_units(tat_ms, policy, now_ms) end
    end
    if cost > burst then return nil end
    local at_ms = now_ms
    local wait_units = units + (cost - burst) * period_ms
    if wait_units > 0 then
      local wait_exact_ms = (now_ms + wait_units / limit) - now_ms
      if wait_exact_ms > EPSILON_MS then
        local wait_ms = ceil_ms(wait_exact_ms)
        if mode ~= "reserve" or wait_ms > max_wait_ms then return nil end
        at_ms = now_ms + wait_ms
        units = gcra_backlog_units(tat_ms, policy, at_ms)
      end
    end
    local new_tat_ms = at_ms + (units + cost * period_ms) / limit
    return new_tat_ms, gcra_encode(new_tat_ms)
  end,
  -- refund (src/core/gcra.ts): the backlog shrinks by amount*T, never below none (tat = now).
  refund = function(tat_ms, policy, now_ms, amount)
    local units = max(0, gcra_backlog_units(tat_ms, policy, now_ms) - amount * policy.periodMs)
    return now_ms + units / policy.limit
  end,
  fresh_at = function(tat_ms)
    return tat_ms
  end,
  encode = gcra_encode,
  decode = function(raw)
    return sub(raw, 3) + 0
  end,
}
