-- common.lua — shared helpers of every Spillway script (library: no KEYS, no ARGV).
-- Mirrors src/core/algorithm.ts and src/core/entries.ts operation for operation, so that
-- Redis and the pure core round and compare floats identically.

-- Float tolerance in ms (src/core/algorithm.ts EPSILON_MS).
local EPSILON_MS = 1e-6

-- Rounds a duration up to whole ms, ignoring float noise (ceilMs).
local function ceil_ms(duration_ms)
  return math.max(0, math.ceil(duration_ms - EPSILON_MS))
end

-- Rounds a count down, ignoring float noise (floorCount).
local function floor_count(count)
  return math.max(0, math.floor(count + 1e-9))
end

-- JavaScript's Math.round: the nearest integer, ties towards +infinity. floor(x + 0.5)
-- is not the same (0.49999999999999994 + 0.5 rounds up to 1 in floating point).
local function js_round(value)
  local floor = math.floor(value)
  if value - floor >= 0.5 then return floor + 1 end
  return floor
end

-- Algorithm tables, filled by the per-algorithm files: earliest, admit, standing, fresh_at.
local ALGORITHMS = {}

-- Entries are {untilMs, cost, leaseId}, sorted by untilMs (src/core/entries.ts).
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
    if sum + cost <= limit then return math.max(now_ms, entry[1]) end
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

local function last_until_ms(entries)
  local last = 0
  for _, entry in ipairs(entries) do last = math.max(last, entry[1]) end
  return last
end

-- JSON output. cjson.encode keeps only 14 significant digits, which would change GCRA's
-- fractional timestamps between writes, so numbers are written with 17 (exact round trip).
local function json_number(value)
  if value == 0 then return "0" end -- no "-0"
  return string.format("%.17g", value)
end

local function json_string(value)
  return '"' .. string.gsub(value, '[%c"\\]', function(char)
    return string.format("\\u%04x", string.byte(char))
  end) .. '"'
end

-- A number or null (nil), a boolean, or a string.
local function json_value(value)
  local kind = type(value)
  if value == nil then return "null" end
  if kind == "number" then return json_number(value) end
  if kind == "boolean" then return value and "true" or "false" end
  return json_string(value)
end

-- An object from an ordered list of {name, value} pairs; values already encoded when raw.
local function json_object(pairs_list)
  local parts = {}
  for i, pair in ipairs(pairs_list) do
    local encoded = pair[3] and pair[2] or json_value(pair[2])
    parts[i] = json_string(pair[1]) .. ":" .. encoded
  end
  return "{" .. table.concat(parts, ",") .. "}"
end

local function json_array(encoded_items)
  return "[" .. table.concat(encoded_items, ",") .. "]"
end

-- Integer arguments to redis.call as strings: Lua's own number-to-string switches to
-- exponent notation above 1e14, which Redis refuses as an integer.
local function int_arg(value)
  return string.format("%.0f", value)
end
