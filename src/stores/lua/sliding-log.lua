-- sliding-log.lua — exact sliding log (library: no KEYS, no ARGV).
-- Mirrors src/core/sliding-log.ts. State: { entries = { {untilMs, cost, ""}, ... } },
-- one entry per admission time; windows are half-open. Stored as "l:<entries>"
-- (entries.lua).

ALGORITHMS["sliding-log"] = {
  tag = "l:",
  earliest = function(state, policy, now_ms, cost)
    return earliest_fit(state and state.entries or {}, policy.limit, now_ms, cost)
  end,
  admit = function(state, policy, now_ms, at_ms, cost)
    local live = live_entries(state and state.entries or {}, now_ms)
    local until_ms = at_ms + policy.periodMs
    local last = live[#live]
    if last and last[1] == until_ms then
      -- Same admission time: merge, so state grows with distinct times, not with requests.
      live[#live] = { until_ms, last[2] + cost, "" }
      return { entries = live }
    end
    return { entries = insert_entry(live, { until_ms, cost, "" }) }
  end,
  standing = entries_standing,
  fresh_at = entries_fresh_at,
  encode = function(state)
    return encode_entries("l:", state)
  end,
  decode = decode_entries,
}
