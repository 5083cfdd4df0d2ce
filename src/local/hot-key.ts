import { capacityOf } from "../core/algorithms.js";
import { LEASABLE_ALGORITHMS } from "../core/policy.js";
import type { Decision, Policy, PolicyDecision } from "../core/types.js";
import { markWarning } from "../core/warning.js";

/**
 * One cache's knowledge of one (key, policy): a denial it may repeat and a batch of units
 * the authoritative store already debited. Every time is this cache's clock, in ms.
 */
export interface HotKey {
  policy: Policy;
  /** The last store denial: requests of at least `deniedCost` are denied until `deniedUntilMs`. */
  denied: { decision: Decision; cost: number; untilMs: number; receivedAtMs: number } | undefined;
  batch: Batch | undefined;
  /** A batch call under way: concurrent requests wait for it instead of calling the store too. */
  refilling: Promise<void> | undefined;
  /** Cost asked of this entry since the last refill, and when that was: the local arrival rate. */
  demandUnits: number;
  lastRefillAtMs: number | undefined;
  ratePerMs: number;
  /** How long the last batch call took: demand during the next one must be covered too. */
  callMs: number;
}

/** Units debited in the store in one call, spent here until `expiresAtMs`. */
export interface Batch {
  leftUnits: number;
  /**
   * The end of the store's window (or refill interval) the units were debited in, seen
   * from here: until then the store's state changes only by admissions, so spending a unit
   * then is the same as the store admitting it then. Computed from the send time, so it is
   * never later than the store's own moment.
   */
  expiresAtMs: number;
  /** The store's answer to the batch call: `remaining` after it, and when the key is fresh. */
  storeRemaining: number;
  resetAtMs: number;
}

export function newHotKey(policy: Policy): HotKey {
  return { policy, denied: undefined, batch: undefined, refilling: undefined, demandUnits: 0, lastRefillAtMs: undefined, ratePerMs: 0, callMs: 0 };
}

/** Whether two policies decide alike (inline policies are parsed anew for every request). */
/** Whether the policy takes token batches (else only the deny cache works for it). */
export function leasable(policy: Policy): boolean {
  return (policy.local?.share ?? 0) > 0 && LEASABLE_ALGORITHMS.has(policy.algorithm);
}

export function samePolicy(a: Policy, b: Policy): boolean {
  return (
    a === b ||
    (a.algorithm === b.algorithm && a.limit === b.limit && a.periodMs === b.periodMs && a.burst === b.burst && a.local?.share === b.local?.share && a.blockMs === b.blockMs &&
      a.calendar?.unit === b.calendar?.unit && a.calendar?.timezone === b.calendar?.timezone)
  );
}

/**
 * How long after the store's decision its window (or refill interval) ends, from the
 * policy's part of an admitted decision; undefined when batches are not exact for it.
 * resetMs is "until fresh": the window's end for fixed-window, one period later for
 * sliding-window (the window's count still weighs in the next), and a point of the refill
 * grid for token-bucket. 1 ms is kept back: stores that read fractional clocks round resetMs up.
 */
export function windowLeftMs(policy: Policy, resetMs: number): number | undefined {
  let leftMs: number;
  if (policy.algorithm === "fixed-window") leftMs = resetMs;
  else if (policy.algorithm === "sliding-window") leftMs = resetMs - policy.periodMs;
  else if (policy.algorithm === "token-bucket") leftMs = resetMs % policy.periodMs === 0 ? policy.periodMs : resetMs % policy.periodMs;
  else return undefined;
  return leftMs - 1 > 0 ? leftMs - 1 : undefined;
}

export interface SizeOptions {
  /** How much local traffic one batch aims to cover. */
  batchTargetMs: number;
}

/** The largest batch: the largest cost of one check (SPEC §2, cost 0 … 1e9). */
const MAX_BATCH_UNITS = 1e9;

/**
 * The units to ask for now, at least `cost`: about batchTargetMs of this entry's measured
 * traffic, at most share × capacity (the bound on what one cache holds), at most what is
 * left of the current window's time at that rate, and at most what the store said remained.
 * Measures the rate as a side effect (smoothed over refills).
 */
export function batchSize(entry: HotKey, cost: number, nowMs: number, options: SizeOptions): number {
  const policy = entry.policy;
  if (entry.lastRefillAtMs !== undefined) {
    const observed = entry.demandUnits / Math.max(1, nowMs - entry.lastRefillAtMs);
    entry.ratePerMs = entry.ratePerMs === 0 ? observed : (entry.ratePerMs + observed) / 2;
  }
  entry.demandUnits = 0;
  entry.lastRefillAtMs = nowMs;
  if (!leasable(policy)) return cost;
  // The batch covers the traffic of the next call's round trip too: it arrives meanwhile.
  const coverMs = options.batchTargetMs + entry.callMs;
  // At most one request's largest cost (1e9): a money budget's share (1e15 × 0.5) is no cost a store or /v1 takes.
  let units = Math.min(Math.floor(policy.local!.share * capacityOf(policy)), Math.ceil(entry.ratePerMs * coverMs), MAX_BATCH_UNITS);
  const last = entry.batch;
  if (last && last.expiresAtMs > nowMs) {
    // Same window: units past its end would only expire, and the store has no more than it said.
    units = Math.min(units, Math.ceil(entry.ratePerMs * (last.expiresAtMs - nowMs)), last.storeRemaining);
  }
  return Math.max(cost, units);
}

/** A local admission from the batch, its fields derived from the batch call's answer (README: "Hot keys"). */
export function batchDecision(policy: Policy, batch: Batch, nowMs: number): Decision {
  const part: PolicyDecision = {
    policy: policy.name,
    allowed: true,
    limit: capacityOf(policy),
    remaining: batch.leftUnits + batch.storeRemaining,
    resetMs: Math.max(0, Math.ceil(batch.resetAtMs - nowMs)),
    retryAfterMs: 0,
  };
  markWarning(policy, part);
  return { ...part, waitMs: 0, policies: [part] };
}

/** A local denial: the store's, with its times moved on by what has passed since. */
export function deniedDecision(denied: NonNullable<HotKey["denied"]>, nowMs: number): Decision {
  // resetMs is counted from the answer's arrival (never earlier than the store's moment);
  // untilMs from the call's start (never later than the store's moment).
  const passedMs = Math.max(0, nowMs - denied.receivedAtMs);
  const retryAfterMs = Math.max(1, Math.ceil(denied.untilMs - nowMs));
  const policies = denied.decision.policies.map((part) => {
    const moved = { ...part, resetMs: Math.max(0, part.resetMs - passedMs), retryAfterMs };
    if (part.blockedMs !== undefined) moved.blockedMs = Math.max(1, part.blockedMs - passedMs);
    return moved;
  });
  const decision = { ...denied.decision, resetMs: Math.max(0, denied.decision.resetMs - passedMs), retryAfterMs, policies };
  if (decision.blockedMs !== undefined) decision.blockedMs = Math.max(1, decision.blockedMs - passedMs);
  return decision;
}
