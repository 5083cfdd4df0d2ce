-- entries.lua — lists of admitted costs, for sliding-log and concurrency (library: no
-- KEYS, no ARGV). Mirrors src/core/entries.ts. Entries are {untilMs, cost, leaseId},
-- sorted by untilMs; the lease id is "" for sliding-log entries.
-- Stored as "<tag>:<untilMs>,<cost>,<leaseId>;..." ("l:" or "c:"); `%`, `,` and `;` in a
-- lease id are percent-escaped.

-- Entries still counting at now_ms (untilMs > now_ms: windows are half-open).
local function live_entries(entries, now_ms)
  local live = {}
  for _, entry in ipairs(entries) do
    if entry[1] > now_ms then live[#live + 1] = entry end
  end
  return live
end

local function total_cost(entries)
  local sum = 0
  for _, entry in ipairs(entries) do sum = sum + entry[2] end
  return sum
end

-- Earliest time >= now_ms at which cost fits under limit; nil when it never can.
local function earliest_fit(entries, limit, now_ms, cost)
  if cost > limit then return nil end
  local live = live_entries(entries, now_ms)
  local sum = total_cost(live)
  if sum + cost <= limit then return now_ms end
  for _, entry in ipairs(live) do
    sum = sum - entry[2]
    if sum + cost <= limit then return max(now_ms, entry[1]) end
  end
  return nil
end

-- Inserts keeping the list sorted by untilMs (stable: equal times keep arrival order).
local function insert_entry(entries, entry)
  local copy = {}
  for i, item in ipairs(entries) do copy[i] = item end
  local index = #copy
  while index > 0 and copy[index][1] > entry[1] + EPSILON_MS do index = index - 1 end
  table.insert(copy, index + 1, entry)
  return copy
end

-- mergeEntry: adds cost until until_ms to the entry that already ends then, else inserts
-- it in sorted place. live is this call's own list (live_entries built it), so it is changed
-- in place: no copy.
local function merge_entry(live, until_ms, cost)
  local index = #live
  while index > 0 and live[index][1] > until_ms do index = index - 1 end
  local same = live[index]
  if same and same[1] == until_ms then
    live[index] = { until_ms, same[2] + cost, "" }
  else
    table.insert(live, index + 1, { until_ms, cost, "" })
  end
  return live
end

-- takeFromEntries: up to amount cost taken back, from the entry that ends at until_ms only,
-- or, when until_ms is nil, from the newest entries first; an entry left with none is dropped.
local function take_from_entries(entries, amount, until_ms)
  local next_entries = {}
  for i, entry in ipairs(entries) do next_entries[i] = entry end
  local left = amount
  for index = #next_entries, 1, -1 do
    if left <= 0 then break end
    local entry = next_entries[index]
    if until_ms == nil or entry[1] == until_ms then
      local taken = min(entry[2], left)
      left = left - taken
      if taken == entry[2] then table.remove(next_entries, index) else next_entries[index] = { entry[1], entry[2] - taken, entry[3] } end
    end
  end
  return next_entries
end

local function last_until_ms(entries)
  local last = 0
  for _, entry in ipairs(entries) do last = max(last, entry[1]) end
  return last
end

-- standing() of both list algorithms: remaining, resetMs.
local function entries_standing(state, policy, now_ms)
  local live = live_entries(state and state.entries or {}, now_ms)
  return max(0, policy.limit - total_cost(live)), max(0, last_until_ms(live) - now_ms)
end

local function entries_fresh_at(state)
  return last_until_ms(state.entries)
end

local function escape_char(char)
  return format("%%%02X", string.byte(char))
end

local function unescape_hex(hex)
  return string.char(tonumber(hex, 16))
end

local function encode_entries(tag, state)
  local items = {}
  for i, entry in ipairs(state.entries) do
    local lease_id = entry[3]
    if find(lease_id, "[%%,;]") then lease_id = string.gsub(lease_id, "[%%,;]", escape_char) end
    items[i] = number_text(entry[1]) .. "," .. number_text(entry[2]) .. "," .. lease_id
  end
  return tag .. table.concat(items, ";")
end

-- nil when raw is not a list of entries.
local function decode_entries(raw)
  local entries = {}
  for item in string.gmatch(sub(raw, 3), "[^;]+") do
    local until_text, cost_text, lease_id = match(item, "^([^,]*),([^,]*),(.*)$")
    local until_ms, cost = tonumber(until_text), tonumber(cost_text)
    if not until_ms or not cost then return nil end
    if find(lease_id, "%", 1, true) then lease_id = string.gsub(lease_id, "%%(%x%x)", unescape_hex) end
    entries[#entries + 1] = { until_ms, cost, lease_id }
  end
  return { entries = entries }
end
