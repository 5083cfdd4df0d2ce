-- common.lua — shared helpers of every Spillway script (library: no KEYS, no ARGV).
-- Mirrors src/core/algorithm.ts operation for operation, so that Redis and the pure core
-- round and compare floats identically.
-- Every EVALSHA runs its whole script, library included, so library files only define
-- local functions and one table per algorithm: nothing is built that a call may not use,
-- and a script holds only the algorithms of its stack (src/stores/redis-scripts.ts).
-- Hot paths turn numeric strings into numbers with `text + 0` (a third of tonumber's cost)
-- and print whole numbers with %d (a third of %.17g's).

local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local format, sub, find, match = string.format, string.sub, string.find, string.match

-- Float tolerance in ms (src/core/algorithm.ts EPSILON_MS).
local EPSILON_MS = 1e-6
local MAX_SAFE_INTEGER = 2 ^ 53

-- Rounds a duration up to whole ms, ignoring float noise (ceilMs: max(0, ...), spelled
-- out because a comparison costs a fraction of a call to math.max).
local function ceil_ms(duration_ms)
  local whole = ceil(duration_ms - EPSILON_MS)
  if whole < 0 then return 0 end
  return whole
end

-- Rounds a count down, ignoring float noise (floorCount).
local function floor_count(count)
  local whole = floor(count + 1e-9)
  if whole < 0 then return 0 end
  return whole
end

-- The algorithms this script holds, by name, each added by its own file:
--   tag                 the prefix of its stored states ("g:" for GCRA)
--   earliest, admit, standing, fresh_at   the src/core Algorithm functions
--   encode(state)       the stored string; decode(raw) the state, or nil if unreadable
-- States are stored compactly ("g:<tatMs>") with number_text. Decoded by
-- src/stores/redis-codec.ts in TypeScript.
local ALGORITHMS = {}

-- A number as text that reads back exactly: whole numbers as digits, others with %.17g.
local function number_text(value)
  if value == floor(value) and value < MAX_SAFE_INTEGER and value > -MAX_SAFE_INTEGER then return format("%d", value) end
  return format("%.17g", value)
end

-- Integer arguments to redis.call as strings, rounded up: Lua's own number-to-string
-- switches to exponent notation above 1e14, which Redis refuses as an integer.
local function int_arg(value)
  return format("%d", ceil(value))
end
