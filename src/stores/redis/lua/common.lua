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
local concat, unpack = table.concat, unpack

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

-- When a state that must never expire becomes fresh (src/core/credits.ts NEVER_FRESH_MS): a
-- spent balance without a refill. Its key is written without an expiry.
local NEVER_FRESH_MS = 8640000000000000

-- Calendar windows (src/core/calendar.ts): the caller sends the boundaries around its own
-- clock (policy.bounds, ascending, from calendarBoundsAround); the window that holds a time is
-- picked here, by the script's clock. This is the one fork between TypeScript and Lua for
-- calendars: TypeScript knows the zones (Intl), the script knows the store's time.
-- Answers the window [start, end) that holds time_ms; a time before the first boundary sent
-- belongs to a window that ended by then (start nil, end the first boundary).
local function calendar_window(policy, time_ms)
  local bounds = policy.bounds
  if time_ms < bounds[1] then return nil, bounds[1] end
  for i = 2, #bounds do
    if time_ms < bounds[i] then return bounds[i - 1], bounds[i] end
  end
  error("spillway: the store's clock is past the calendar boundaries sent (the client's and the store's clocks differ by more than an hour)")
end

-- The start of the calendar window that holds time_ms (a time the script decides at: never
-- before the first boundary sent, or the clocks differ by more than the margin).
local function calendar_start(policy, time_ms)
  local start_ms = calendar_window(policy, time_ms)
  if start_ms == nil then error("spillway: the store's clock is before the calendar boundaries sent (the client's and the store's clocks differ by more than an hour)") end
  return start_ms
end

-- The end of the calendar window that starts at (or holds) start_ms.
local function calendar_end(policy, start_ms)
  local _, end_ms = calendar_window(policy, start_ms)
  return end_ms
end
