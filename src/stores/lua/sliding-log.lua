-- sliding-log.lua — exact sliding log (library: no KEYS, no ARGV).
-- Mirrors src/core/sliding-log.ts. State: { entries = { {untilMs, cost, ""}, ... } },
-- one entry per admission time; windows are half-open.

local function encode_entries(state)
  local items = {}
  for i, entry in ipairs(state.entries) do
    items[i] = json_array({ json_number(entry[1]), json_number(entry[2]), json_string(entry[3]) })
  end
  return json_object({ { "entries", json_array(items), true } })
end

local function entries_standing(state, policy, now_ms)
  local live = live_entries(state and state.entries or {}, now_ms)
  return math.max(0, policy.limit - total_cost(live)), math.max(0, last_until_ms(live) - now_ms)
end

ALGORITHMS["sliding-log"] = {
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
  fresh_at = function(state)
    return last_until_ms(state.entries)
  end,
  encode = encode_entries,
}
