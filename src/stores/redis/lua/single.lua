-- single.lua — decides one request (check, reserve or peek) against one policy that takes
-- no lease, the usual request, in one atomic step. Arguments that have their usual value are
-- left out (each one costs Redis time), so the usual check sends the policy alone.
-- KEYS[1]  state of the policy
-- ARGV[1]  the policy: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[2]  cost (0 peeks), absent for 1
-- ARGV[3]  mode, "reject" or "reserve", absent for reject
-- ARGV[4]  maxWaitMs, absent for 0
-- ARGV[5]  clock: absent for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"; either
--          may be given with "@<deadlineMs>" ("" + it for the server clock: context.lua's read_clock)
-- Returns "<1|0> <sec> <usec> <stored>": whether it was admitted, the server clock (TIME's two
--   numbers; absent with the client clock) and the state stored before the call (empty when
--   none). The caller computes the rest of the decision from those with src/core
--   (decodeSingleDecision in src/stores/redis/codec.ts) and checks that it agrees.
-- Written out in one place (read_clock, decode_stored and admit_one are the long way, and
-- the algorithm's step the short one): each Lua call and table lookup is Redis time.
local policy = policy_of(ARGV[1])
if policy.concurrency then error("spillway: single.lua decides no concurrency policy") end
local impl, key = policy.impl, KEYS[1]
local now_ms, slack_ms, time
if ARGV[5] then
  -- The client clock, or a deadline (read_clock): the server clock's TIME comes back too.
  now_ms, slack_ms, time = read_clock(ARGV[5])
else
  time = redis.call("TIME")
  now_ms = time[1] * 1000 + floor(time[2] / 1000)
end
local raw = redis.call("GET", key)
local cost, mode, max_wait_ms = 1, ARGV[3] or "reject", 0
if ARGV[2] then cost = ARGV[2] + 0 end
if ARGV[4] then max_wait_ms = ARGV[4] + 0 end
local fresh_at_ms, value, at_text, same_fresh_at = nil, nil, nil, false
if cost > 0 and impl.step and not policy.bounds and (not raw or sub(raw, 1, 2) == impl.tag) then
  -- The algorithm's own state or none: one call does it all (gcra.lua).
  fresh_at_ms, value, at_text, same_fresh_at = impl.step(raw, policy, now_ms, cost, mode, max_wait_ms)
else
  local live, live_fresh_at_ms = nil, nil
  if raw then
    live = decode_stored(raw, policy, key)
    if live ~= nil then
      live_fresh_at_ms = impl.fresh_at(live, policy)
      if now_ms >= live_fresh_at_ms then live = nil end
    end
  end
  local state = admit_one(policy, live, now_ms, cost, mode, max_wait_ms)
  if state then
    value, at_text = impl.encode(state)
    fresh_at_ms = impl.fresh_at(state, policy)
    same_fresh_at = live ~= nil and fresh_at_ms == live_fresh_at_ms
  end
end
local admitted = "0 "
if fresh_at_ms then
  write_until_fresh(key, value, fresh_at_ms, same_fresh_at, now_ms, slack_ms, at_text)
  admitted = "1 "
end
-- One concatenation (one VM instruction), no number formatting.
if time then return admitted .. time[1] .. " " .. time[2] .. " " .. (raw or "") end
return admitted .. (raw or "")
