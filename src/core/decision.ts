import { EPSILON_MS, ceilMs, floorCount } from "./algorithm.js";
import { type AnyState, type StoredState, algorithmOf, capacityOf, liveState, wrapState } from "./algorithms.js";
import type { CheckOptions, Decision, Policy, PolicyDecision } from "./types.js";

export interface DecideInput extends CheckOptions {
  /** Id for the lease a concurrency policy records when it admits (the store makes it). */
  leaseId?: string;
  /** Overrides the lease length of concurrency policies. */
  leaseMs?: number;
  /** Names of concurrency policies with FIFO waiters queued: nobody may pass them. */
  queuedPolicies?: ReadonlySet<string>;
}

/** A state to write back (with the time it becomes fresh, for expiry), or null to delete. */
export type StateChange = { stored: StoredState; freshAtMs: number } | null;

export interface DecideOutput {
  decision: Decision;
  /** Only the policies whose state changed. */
  changes: Map<string, StateChange>;
}

interface Evaluated {
  policy: Policy;
  state: AnyState | undefined;
  /** Earliest admission time of this request for this policy alone; null: never. */
  earliestMs: number | null;
  blockedByQueue: boolean;
}

/**
 * Decides one request against a stack of policies on one key, all-or-nothing: the request
 * is admitted at the latest of each policy's earliest slot (every algorithm is monotone,
 * so each still admits then), or nothing is consumed at all.
 *
 * @example decide([perMinute], (name) => states.get(name), Date.now(), { cost: 1, mode: "reject", maxWaitMs: 0 })
 */
export function decide(
  policies: readonly Policy[],
  read: (policyName: string) => StoredState | undefined,
  nowMs: number,
  input: DecideInput,
): DecideOutput {
  const probeCost = input.cost === 0 ? 1 : input.cost;
  const evaluated: Evaluated[] = policies.map((policy) => {
    const state = liveState(read(policy.name), policy, nowMs);
    return {
      policy,
      state,
      earliestMs: algorithmOf(policy).earliestMs(state, policy, nowMs, probeCost),
      // Only a concurrency policy has waiters: a policy of another algorithm that happens to
      // share the name (a redefinition) is not held up by them.
      blockedByQueue: policy.algorithm === "concurrency" && (input.queuedPolicies?.has(policy.name) ?? false),
    };
  });

  // One pass, no spread: decide runs for every request of every in-process store.
  let never = false;
  let blocked = false;
  let atMs = nowMs;
  for (const item of evaluated) {
    if (item.earliestMs === null) never = true;
    else if (item.earliestMs > atMs) atMs = item.earliestMs;
    if (item.blockedByQueue) blocked = true;
  }
  if (atMs - nowMs <= EPSILON_MS) atMs = nowMs;
  const waitMs = ceilMs(atMs - nowMs);
  // The caller acts at now + waitMs (whole ms), so the request is recorded then, not at a
  // fractional earliest moment: recording it earlier would let the next slot come too soon.
  const slotMs = nowMs + waitMs;
  const fitsNow = !never && !blocked && waitMs === 0;
  const fitsReserved = !never && !blocked && input.mode === "reserve" && waitMs <= input.maxWaitMs;
  // A peek (cost 0) says whether a cost-1 request would be admitted now; it never reserves.
  const admit = input.cost > 0 && (fitsNow || fitsReserved);
  const allowed = input.cost === 0 ? fitsNow : admit;

  const changes = new Map<string, StateChange>();
  const usesLease = admit && policies.some((policy) => policy.algorithm === "concurrency");
  if (usesLease && !input.leaseId) throw new Error("a leaseId is needed to admit a concurrency policy");
  const results = evaluated.map((item): PolicyDecision => {
    const algorithm = algorithmOf(item.policy);
    let state = item.state;
    if (admit) {
      const lease = item.policy.algorithm === "concurrency" ? { leaseId: input.leaseId!, leaseMs: input.leaseMs } : undefined;
      state = algorithm.admit(state, item.policy, nowMs, slotMs, input.cost, lease);
      changes.set(item.policy.name, { stored: wrapState(item.policy, state), freshAtMs: algorithm.freshAtMs(state, item.policy) });
    }
    const standing = algorithm.standing(state, item.policy, nowMs);
    const allowedAlone = admit || (item.earliestMs !== null && item.earliestMs - nowMs <= EPSILON_MS && !item.blockedByQueue);
    return {
      policy: item.policy.name,
      allowed: allowedAlone,
      limit: capacityOf(item.policy),
      remaining: floorCount(standing.remaining),
      resetMs: ceilMs(standing.resetMs),
      retryAfterMs: allowedAlone ? 0 : policyRetryAfterMs(item, nowMs),
    };
  });

  const top = mostRestrictive(results, allowed);
  const decision: Decision = {
    allowed,
    limit: top.limit,
    remaining: top.remaining,
    resetMs: top.resetMs,
    retryAfterMs: allowed ? 0 : never ? null : Math.max(1, waitMs, ...results.map((r) => r.retryAfterMs ?? 0)),
    waitMs: admit ? waitMs : 0,
    policy: top.policy,
    policies: results,
  };
  if (usesLease) {
    decision.leaseId = input.leaseId;
    decision.leaseMs = input.leaseMs ?? Math.min(...policies.filter((p) => p.algorithm === "concurrency").map((p) => p.leaseMs));
  }
  return { decision, changes };
}

/** A denied policy's own retry time; a queue ahead of it counts as at least 1 ms. */
function policyRetryAfterMs(item: Evaluated, nowMs: number): number | null {
  if (item.earliestMs === null) return null;
  return Math.max(1, ceilMs(item.earliestMs - nowMs));
}

/**
 * The policy the top level describes: when denied, the one that frees up last (never
 * first); when allowed, the one with the fewest requests remaining. Ties keep stack order.
 */
function mostRestrictive(results: PolicyDecision[], allowed: boolean): PolicyDecision {
  let top = results[0]!;
  for (let i = 1; i < results.length; i++) {
    const result = results[i]!;
    if (allowed ? result.remaining < top.remaining : denialRank(result) > denialRank(top)) top = result;
  }
  return top;
}

function denialRank(result: PolicyDecision): number {
  if (result.allowed) return -1;
  return result.retryAfterMs === null ? Number.POSITIVE_INFINITY : result.retryAfterMs;
}
