-- common.lua — shared helpers of every Spillway script (library: no KEYS, no ARGV).
-- Mirrors src/core/algorithm.ts operation for operation, so that Redis and the pure core
-- round and compare floats identically.
-- Every EVALSHA runs its whole script, library included, so library files only define
-- local functions and one table per algorithm: nothing is built that a call may not use,
-- and a script holds only the algorithms of its stack (src/stores/redis-scripts.ts).

local floor, ceil, max, min = math.floor, math.ceil, math.max, math.min
local format, sub, find, match = string.format, string.sub, string.find, string.match

-- Float tolerance in ms (src/core/algorithm.ts EPSILON_MS).
local EPSILON_MS = 1e-6

-- Rounds a duration up to whole ms, ignoring float noise (ceilMs).
local function ceil_ms(duration_ms)
  return max(0, ceil(duration_ms - EPSILON_MS))
end

-- Rounds a count down, ignoring float noise (floorCount).
local function floor_count(count)
  return max(0, floor(count + 1e-9))
end

-- JavaScript's Math.round: the nearest integer, ties towards +infinity. floor(x + 0.5)
-- is not the same (0.49999999999999994 + 0.5 rounds up to 1 in floating point).
local function js_round(value)
  local whole = floor(value)
  if value - whole >= 0.5 then return whole + 1 end
  return whole
end

-- The algorithms this script holds, by name, each added by its own file:
--   tag                 the prefix of its stored states ("g:" for GCRA)
--   earliest, admit, standing, fresh_at   the src/core Algorithm functions
--   encode(state)       the stored string; decode(raw) the state, or nil if unreadable
-- States are stored compactly ("g:<tatMs>"); numbers are written with %.17g, which is
-- exact for every double (integers come out as plain digits). Decoded by
-- src/stores/redis-codec.ts in TypeScript.
local ALGORITHMS = {}

-- Integer arguments to redis.call as strings: Lua's own number-to-string switches to
-- exponent notation above 1e14, which Redis refuses as an integer.
local function int_arg(value)
  return format("%.0f", value)
end
