import type { Algorithm } from "./algorithm.js";
import { type Entry, earliestFit, insertEntry, lastUntilMs, liveEntries, totalCost } from "./entries.js";

/** Leases held, sorted by expiry: [untilMs, slots, leaseId]. */
export interface ConcurrencyState {
  entries: Entry[];
}

/**
 * A semaphore of `limit` slots. Each admission holds a lease until it is released or
 * expires; without releases, a slot comes back when its lease expires.
 */
export const concurrency: Algorithm<ConcurrencyState> = {
  earliestMs(state, policy, nowMs, cost) {
    return earliestFit(state?.entries ?? [], policy.limit, nowMs, cost);
  },
  admit(state, policy, nowMs, atMs, cost, lease) {
    if (!lease) throw new Error("concurrency admission needs a lease id");
    const live = liveEntries(state?.entries ?? [], nowMs);
    return { entries: insertEntry(live, [atMs + (lease.leaseMs ?? policy.leaseMs), cost, lease.leaseId]) };
  },
  standing(state, policy, nowMs) {
    const live = liveEntries(state?.entries ?? [], nowMs);
    return { remaining: Math.max(0, policy.limit - totalCost(live)), resetMs: Math.max(0, lastUntilMs(live) - nowMs) };
  },
  freshAtMs(state) {
    return lastUntilMs(state.entries);
  },
};

/** Removes a lease. Returns the new state and whether the lease was held. */
export function releaseLease(state: ConcurrencyState | undefined, leaseId: string, nowMs: number): { state: ConcurrencyState; released: boolean } {
  const live = liveEntries(state?.entries ?? [], nowMs);
  const kept = live.filter((entry) => entry[2] !== leaseId);
  return { state: { entries: kept }, released: kept.length < live.length };
}

/**
 * Moves a held lease's expiry to nowMs + leaseMs. Live leases above `limit` mean a reserved
 * lease is waiting for one of them to expire; lengthening any lease then could hand its slot
 * to two holders, so it is refused (shortening is always safe).
 */
export function extendLease(
  state: ConcurrencyState | undefined,
  leaseId: string,
  nowMs: number,
  leaseMs: number,
  limit: number,
): { state: ConcurrencyState; extended: boolean; refused: boolean } {
  const live = liveEntries(state?.entries ?? [], nowMs);
  const held = live.find((entry) => entry[2] === leaseId);
  if (!held) return { state: { entries: live }, extended: false, refused: false };
  if (nowMs + leaseMs > held[0] && totalCost(live) > limit) return { state: { entries: live }, extended: false, refused: true };
  const others = live.filter((entry) => entry !== held);
  return { state: { entries: insertEntry(others, [nowMs + leaseMs, held[1], leaseId]) }, extended: true, refused: false };
}
