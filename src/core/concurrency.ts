import type { Algorithm } from "./algorithm.js";
import type { Policy } from "./types.js";
import { type Entry, earliestFit, insertEntry, lastUntilMs, liveEntries, totalCost } from "./entries.js";

/** Leases held, sorted by expiry: [untilMs, slots, leaseId]. */
export interface ConcurrencyState {
  entries: Entry[];
}

export function concurrencyPolicies(policies: readonly Policy[]): Policy[] {
  return policies.filter((policy) => policy.algorithm === "concurrency");
}

/**
 * How long a lease of this stack lasts when the caller names no leaseMs: the shortest leaseMs
 * of its concurrency policies, since the lease is theirs (a rate policy's leaseMs is unused).
 * Every store answers by this rule, for acquire and extend alike (the Redis scripts mirror it
 * in decide.lua). A stack without a concurrency policy holds no lease; an extend on it still
 * reports a length: the shortest of all its policies (each carries a leaseMs).
 */
export function stackLeaseMs(policies: readonly Policy[]): number {
  const leased = concurrencyPolicies(policies);
  return Math.min(...(leased.length > 0 ? leased : policies).map((policy) => policy.leaseMs));
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
