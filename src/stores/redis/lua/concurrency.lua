-- concurrency.lua — semaphore of `limit` leases (library: no KEYS, no ARGV).
-- Mirrors src/core/concurrency.ts. State: { entries = { {untilMs, slots, leaseId}, ... } }
-- sorted by expiry; a lease not released comes back when it expires. Stored as
-- "c:<entries>" (entries.lua).

ALGORITHMS["concurrency"] = {
  tag = "c:",
  earliest = function(state, policy, now_ms, cost)
    return earliest_fit(state and state.entries or {}, policy.limit, now_ms, cost)
  end,
  admit = function(state, policy, now_ms, at_ms, cost, lease)
    local live = live_entries(state and state.entries or {}, now_ms)
    local lease_ms = lease.leaseMs or policy.leaseMs
    return { entries = insert_entry(live, { at_ms + lease_ms, cost, lease.leaseId }) }
  end,
  standing = entries_standing,
  fresh_at = entries_fresh_at,
  encode = function(state)
    return encode_entries("c:", state)
  end,
  decode = decode_entries,
}

-- Removes a lease (releaseLease). Returns the new state and whether the lease was held.
local function release_lease(state, lease_id, now_ms)
  local live = live_entries(state and state.entries or {}, now_ms)
  local kept = {}
  for _, entry in ipairs(live) do
    if entry[3] ~= lease_id then kept[#kept + 1] = entry end
  end
  return { entries = kept }, #kept < #live
end

-- Moves a held lease's expiry to now_ms + lease_ms (extendLease). Live leases above `limit`
-- mean a reserved lease waits for one of them to expire; lengthening any lease then could
-- hand its slot to two holders, so it is refused (shortening is always safe).
-- Returns the new state, whether it was extended, and whether it was refused.
local function extend_lease(state, lease_id, now_ms, lease_ms, limit)
  local live = live_entries(state and state.entries or {}, now_ms)
  local held = nil
  for _, entry in ipairs(live) do
    if entry[3] == lease_id then
      held = entry
      break
    end
  end
  if not held then return { entries = live }, false, false end
  if now_ms + lease_ms > held[1] and total_cost(live) > limit then return { entries = live }, false, true end
  local others = {}
  for _, entry in ipairs(live) do
    if entry ~= held then others[#others + 1] = entry end
  end
  return { entries = insert_entry(others, { now_ms + lease_ms, held[2], lease_id }) }, true, false
end
