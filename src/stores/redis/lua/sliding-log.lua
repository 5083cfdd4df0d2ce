-- sliding-log.lua — sliding log on a bucket grid (library: no KEYS, no ARGV).
-- Mirrors src/core/sliding-log.ts. State: { entries = { {untilMs, cost, ""}, ... } }, at most
-- one entry per bucket of the grid (period / SLIDING_LOG_BUCKETS, whole ms), so at most
-- SLIDING_LOG_BUCKETS + 1 live entries whatever the limit; windows are half-open. Stored as
-- "l:<entries>" (entries.lua).

-- src/core/sliding-log.ts SLIDING_LOG_BUCKETS.
local SLIDING_LOG_BUCKETS = 64

-- slidingLogUntilMs: at + period rounded up to the bucket grid (aligned to absolute time),
-- with the same float operations as the core, so both land on the same entry.
local function sliding_log_until_ms(at_ms, period_ms)
  local bucket_ms = max(1, ceil(period_ms / SLIDING_LOG_BUCKETS))
  return ceil((at_ms + period_ms) / bucket_ms) * bucket_ms
end

local function sliding_log_earliest(state, policy, now_ms, cost)
  return earliest_fit(state and state.entries or {}, policy.limit, now_ms, cost)
end

local function sliding_log_admit(state, policy, now_ms, at_ms, cost)
  local live = live_entries(state and state.entries or {}, now_ms)
  return { entries = merge_entry(live, sliding_log_until_ms(at_ms, policy.periodMs), cost) }
end

-- The admission time of the usual request (admit_one in decide.lua, which loads after this
-- file): now, now + wait for a reservation within max_wait_ms, or nil.
local function sliding_log_slot(earliest_ms, now_ms, mode, max_wait_ms)
  if earliest_ms == nil then return nil end
  if earliest_ms - now_ms <= EPSILON_MS then return now_ms end
  local wait_ms = ceil_ms(earliest_ms - now_ms)
  if mode ~= "reserve" or wait_ms > max_wait_ms then return nil end
  return now_ms + wait_ms
end

-- step's answer the long way, on tables: for what the fast path does not take on (numbers
-- that are not whole, an admission that ends before the last live entry).
local function sliding_log_step_tables(raw, policy, now_ms, cost, mode, max_wait_ms)
  local state, stored_fresh_at_ms = nil, nil
  if raw then
    state = decode_entries(raw)
    if not state then error("spillway: unreadable sliding-log state " .. raw) end
    stored_fresh_at_ms = entries_fresh_at(state)
    if now_ms >= stored_fresh_at_ms then state = nil end
  end
  local at_ms = sliding_log_slot(sliding_log_earliest(state, policy, now_ms, cost), now_ms, mode, max_wait_ms)
  if at_ms == nil then return nil end
  local next_state = sliding_log_admit(state, policy, now_ms, at_ms, cost)
  local fresh_at_ms = entries_fresh_at(next_state)
  return fresh_at_ms, encode_entries("l:", next_state), nil, state ~= nil and fresh_at_ms == stored_fresh_at_ms
end

ALGORITHMS["sliding-log"] = {
  tag = "l:",
  earliest = sliding_log_earliest,
  admit = sliding_log_admit,
  -- The usual request in one call (single.lua), as gcra.lua's: raw, the stored text, is this
  -- algorithm's or false (none); cost ≥ 1. Answers the new fresh_at, stored text, the %d
  -- text of its expiry and whether the stored state was live with that same fresh_at, or nil
  -- when not admitted. One pass over the text reads the numbers (no table per entry), and
  -- the new text is the old one's live part with the admission merged into or written after
  -- its last entry: an admission never ends before one made earlier, unless it was
  -- reserved behind a later one, which goes the long way (sliding_log_step_tables).
  step = function(raw, policy, now_ms, cost, mode, max_wait_ms)
    local limit = policy.limit
    local untils, costs, count = {}, {}, 0
    -- Live entries: untils/costs[first_live..count]; live_at is where their text starts.
    local first_live, live_at, last_at, live_sum, stored_fresh_at_ms = nil, nil, nil, 0, nil
    if raw then
      local at, length = 3, #raw
      while at <= length do
        local _, ends, until_text, cost_text = find(raw, "^(%d+),(%d+),;?", at)
        -- Not whole numbers, a lease id, or a dead entry after a live one: the long way.
        if not ends then return sliding_log_step_tables(raw, policy, now_ms, cost, mode, max_wait_ms) end
        local until_ms, entry_cost = until_text + 0, cost_text + 0
        count = count + 1
        untils[count], costs[count] = until_ms, entry_cost
        if until_ms > now_ms then
          if not first_live then first_live, live_at = count, at end
          live_sum = live_sum + entry_cost
        elseif first_live then
          return sliding_log_step_tables(raw, policy, now_ms, cost, mode, max_wait_ms)
        end
        if stored_fresh_at_ms == nil or until_ms > stored_fresh_at_ms then stored_fresh_at_ms = until_ms end
        last_at, at = at, ends + 1
      end
      if count == 0 then return sliding_log_step_tables(raw, policy, now_ms, cost, mode, max_wait_ms) end
    end
    -- Refused only now: an unreadable state (the long way raises) is a store fault, not a denial.
    if cost > limit then return nil end
    -- A stored state fresh at now counts as none (fresh_at is its last until).
    local live = first_live ~= nil and now_ms < stored_fresh_at_ms
    -- earliest_fit on the live entries.
    local earliest_ms = now_ms
    if live and live_sum + cost > limit then
      local sum = live_sum
      for i = first_live, count do
        sum = sum - costs[i]
        if sum + cost <= limit then
          earliest_ms = max(now_ms, untils[i])
          break
        end
      end
    end
    local at_ms = sliding_log_slot(earliest_ms, now_ms, mode, max_wait_ms)
    if at_ms == nil then return nil end
    local until_ms = sliding_log_until_ms(at_ms, policy.periodMs)
    if not live then
      local at_text = format("%d", until_ms)
      return until_ms, format("l:%s,%d,", at_text, cost), at_text, false
    end
    -- Ends before the latest live entry (a reservation behind a later one): the long way.
    if until_ms < stored_fresh_at_ms then return sliding_log_step_tables(raw, policy, now_ms, cost, mode, max_wait_ms) end
    local at_text = format("%d", until_ms)
    local value
    if until_ms == untils[count] then
      -- Same bucket as the last entry: its cost grows.
      value = "l:" .. sub(raw, live_at, last_at - 1) .. format("%s,%d,", at_text, costs[count] + cost)
    else
      value = "l:" .. sub(raw, live_at) .. format(";%s,%d,", at_text, cost)
    end
    return until_ms, value, at_text, until_ms == stored_fresh_at_ms
  end,
  -- refund (src/core/sliding-log.ts): from the bucket the units were spent in, or the newest
  -- entries when the caller names no time.
  refund = function(state, policy, now_ms, amount, spent_ms)
    local until_ms = nil
    if spent_ms ~= nil then until_ms = sliding_log_until_ms(spent_ms, policy.periodMs) end
    return { entries = take_from_entries(live_entries(state.entries, now_ms), amount, until_ms) }
  end,
  standing = entries_standing,
  fresh_at = entries_fresh_at,
  encode = function(state)
    return encode_entries("l:", state)
  end,
  decode = decode_entries,
}
