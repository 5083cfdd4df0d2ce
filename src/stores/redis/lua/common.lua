-- common.lua — shared helpers of every Spillway script (library: no KEYS, no ARGV).
-- Mirrors src/core/algorithm.ts operation for operation, so that Redis and the pure core
-- round and compare floats identically.
-- The library is loaded once per server as Redis Functions; where those are unavailable,
-- every EVALSHA runs its whole script, library included. So library files only define
-- local functions and one table per algorithm, and an EVALSHA script holds only the
-- algorithms of its stack (src/stores/redis/scripts.ts).
-- Every call is Redis time: hot paths turn numeric strings into numbers with `text + 0`
-- (half of tonumber's cost), print whole numbers with %d (a third of %.17g's), and build
-- as few tables as they can.

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
--   encode(state)       the stored string, and optionally the %d text of ceil(fresh_at)
--                       when it has it for free; decode(raw) the state (raises, or answers nil,
--                       when raw is not one: `"x" + 0` is a Lua error)
--   step(raw, ...)      optional: single.lua's usual request fused into one call, for the
--                       hottest algorithms (see gcra.lua)
-- A state is whatever its algorithm's functions agree on (a table, or GCRA's bare number);
-- only they look inside it. States are stored compactly ("g:<tatMs>", number<N>_text) and
-- decoded by src/stores/redis/codec.ts in TypeScript.
local ALGORITHMS = {}

-- Whole and printable with %d exactly (`% 1` is the VM's own arithmetic: no call).
local function is_whole(value)
  return value % 1 == 0 and value < MAX_SAFE_INTEGER and value > -MAX_SAFE_INTEGER
end

-- A number as text that reads back exactly: whole numbers as digits, others with %.17g.
local function number_text(value)
  if is_whole(value) then return format("%d", value) end
  return format("%.17g", value)
end

-- "<tag><a>:<b>" and "<tag><a>:<b>:<c>" with each number as number_text writes it. Whole
-- numbers in range, the usual case, are printed in one format call with the algorithm's own
-- format string (`whole`, such as "s:%d:%d:%d"): half the cost of a generic "%s%d".
local function number2_text(whole, tag, a, b)
  if is_whole(a) and is_whole(b) then return format(whole, a, b) end
  return tag .. number_text(a) .. ":" .. number_text(b)
end

local function number3_text(whole, tag, a, b, c)
  -- is_whole inlined three times: this runs on every sliding-window admission.
  if a % 1 == 0 and b % 1 == 0 and c % 1 == 0 and a < MAX_SAFE_INTEGER and b < MAX_SAFE_INTEGER and c < MAX_SAFE_INTEGER
    and a > -MAX_SAFE_INTEGER and b > -MAX_SAFE_INTEGER and c > -MAX_SAFE_INTEGER then
    return format(whole, a, b, c)
  end
  return tag .. number_text(a) .. ":" .. number_text(b) .. ":" .. number_text(c)
end

-- Integer arguments to redis.call as strings, rounded up: Lua's own number-to-string
-- switches to exponent notation above 1e14, which Redis refuses as an integer.
local function int_arg(value)
  return format("%d", ceil(value))
end
