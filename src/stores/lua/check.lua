-- check.lua — decides one request (check, reserve or peek) against a stack of policies
-- on one key, all-or-nothing, in one atomic step.
-- KEYS[i]    state of policy i of the stack, i = 1..N
-- KEYS[N+1]  waiter queue of the user key (zset), only when the stack has a concurrency policy
-- KEYS[N+2]  waiters of the user key (hash), likewise
-- ARGV[1]    clock: "" for the Redis server clock (TIME), or "<nowMs>:<expirySlackMs>"
-- ARGV[2]    N, the number of policies
-- ARGV[2+i]  policy i: "<algorithm> <limit> <periodMs> <burst> <leaseMs> <name>"
-- ARGV[3+N]  pub/sub channel that wakes waiters, only with the waiter keys
-- then: cost (0 peeks); mode, "reject" (or absent) or "reserve"; maxWaitMs (reserve);
--       leaseId for concurrency policies; leaseMs override, or "" or absent
-- Returns, for one policy without leases (the usual request): "<1|0> <sec> <usec> <stored>",
--   whether it was admitted, the server clock (TIME's two numbers; absent with the client
--   clock) and the state stored before the call (empty when none): the caller computes the
--   rest of the decision from those with src/core (admit_one in decide.lua);
-- for any other stack: the whole decision as one string of integers (decide.lua).
-- The waiter keys are passed only when the stack has a concurrency policy (the script
-- then holds waiters.lua): only those have waiters. Each key costs Redis time.
local single = ARGV[2] == "1" and policy_of(ARGV[3])
if single and not single.concurrency then
  -- The usual request, written out in one place (read_clock, decode_stored, admit_one and
  -- write_policy_state are the long way): each Lua call and table lookup is Redis time.
  local impl, key = single.impl, KEYS[1]
  local now_ms, slack_ms, time
  if ARGV[1] == "" then
    time = redis.call("TIME")
    now_ms = time[1] * 1000 + floor(time[2] / 1000)
  else
    now_ms, slack_ms = read_clock(ARGV[1])
  end
  local raw = redis.call("GET", key)
  local cost, mode, max_wait_ms = ARGV[4] + 0, ARGV[5] or "reject", 0
  if mode == "reserve" then max_wait_ms = ARGV[6] + 0 end
  local admitted = "0 "
  if cost > 0 and impl.step and (not raw or sub(raw, 1, 2) == impl.tag) then
    -- The algorithm's own state or none: one call does it all (gcra.lua).
    local fresh_at_ms, value, at_text = impl.step(raw, single, now_ms, cost, mode, max_wait_ms)
    if fresh_at_ms then
      set_until_fresh(key, value, fresh_at_ms, now_ms, slack_ms, at_text)
      admitted = "1 "
    end
  else
    local live = nil
    if raw then
      live = decode_stored(raw, single, key)
      if live ~= nil and now_ms >= impl.fresh_at(live, single) then live = nil end
    end
    local state = admit_one(single, live, now_ms, cost, mode, max_wait_ms)
    if state then
      local value, at_text = impl.encode(state)
      set_until_fresh(key, value, impl.fresh_at(state, single), now_ms, slack_ms, at_text)
      admitted = "1 "
    end
  end
  -- One concatenation (one VM instruction), no number formatting.
  if time then return admitted .. time[1] .. " " .. time[2] .. " " .. (raw or "") end
  return admitted .. (raw or "")
end

local ctx = read_context()
local arg = ctx.nextArg
local mode = ARGV[arg + 1] or "reject"
local max_wait_ms = 0
if mode == "reserve" then max_wait_ms = ARGV[arg + 2] + 0 end
local queued, lease_id, lease_ms = nil, nil, nil
if ctx.hasConcurrency then
  -- Checks may not pass a concurrency policy that somebody waits for (FIFO).
  queued = prune_waiters(ctx)
  lease_id, lease_ms = optional_string(ARGV[arg + 3]), optional_number(ARGV[arg + 4])
end
local decision, changes = decide(ctx, ARGV[arg] + 0, mode, max_wait_ms, lease_id, lease_ms, queued)
write_changes(ctx, changes)
return decision_text(decision)
