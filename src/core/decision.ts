import { EPSILON_MS, ceilMs, floorCount } from "./algorithm.js";
import { type AnyState, type StoredState, algorithmOf, capacityOf, liveBlockMs, liveState, wrapState } from "./algorithms.js";
import { stackLeaseMs } from "./concurrency.js";
import { policyCosts } from "./costs.js";
import { markTopWarning, markWarning } from "./warning.js";
import type { CheckOptions, Decision, Policy, PolicyDecision } from "./types.js";

export interface DecideInput extends CheckOptions {
  /** Id for the lease a concurrency policy records when it admits (the store makes it). */
  leaseId?: string;
  /** Overrides the lease length of concurrency policies. */
  leaseMs?: number;
  /** Names of concurrency policies with FIFO waiters queued: nobody may pass them. */
  queuedPolicies?: ReadonlySet<string>;
  /** A peek (Limiter.peek, or the answer of a debit): reports the state, changes nothing. */
  peek?: boolean;
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
  /** Earliest admission time of this request for this policy alone (a block's end at the soonest); null: never. */
  earliestMs: number | null;
  blockedByQueue: boolean;
  /** The end of the block this policy holds on the key (policy `block`), or undefined. */
  blockedUntilMs: number | undefined;
}

/** What a cost is probed at: itself, or 1 for a peek (cost 0: would one unit pass?). */
const probeOf = (cost: number) => (cost === 0 ? 1 : cost);

/**
 * Decides one request against a stack of policies on one key, all-or-nothing: the request
 * is admitted at the latest of each policy's earliest slot (every algorithm is monotone,
 * so each still admits then), or nothing is consumed at all. With `input.costs` each policy
 * is probed at, and consumes, its own cost (CheckOptions.costs: 0 peeks that policy).
 *
 * @example decide([perMinute], (name) => states.get(name), Date.now(), { cost: 1, mode: "reject", maxWaitMs: 0 })
 */
export function decide(
  policies: readonly Policy[],
  read: (policyName: string) => StoredState | undefined,
  nowMs: number,
  input: DecideInput,
  /** false: a store that records the admission itself (Redis stack.lua) needs no changes (none are built). */
  record = true,
): DecideOutput {
  // One cost per policy (CheckOptions.costs), or every policy at input.cost.
  const costs = input.costs === undefined ? undefined : policyCosts(input.costs, policies, "costs", 0);
  const consumed = costs === undefined ? input.cost > 0 : costs.some((cost) => cost > 0);
  const evaluated: Evaluated[] = policies.map((policy, index) => {
    const probeCost = probeOf(costs === undefined ? input.cost : costs[index]!);
    const stored = read(policy.name);
    const state = liveState(stored, policy, nowMs);
    const blockedUntilMs = policy.blockMs === undefined ? undefined : liveBlockMs(stored, policy, nowMs);
    return {
      policy,
      state,
      earliestMs: blockedEarliestMs(algorithmOf(policy).earliestMs(state, policy, nowMs, probeCost), blockedUntilMs),
      // Only a concurrency policy has waiters: a policy of another algorithm that happens to
      // share the name (a redefinition) is not held up by them.
      blockedByQueue: policy.algorithm === "concurrency" && (input.queuedPolicies?.has(policy.name) ?? false),
      blockedUntilMs,
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
  let slot = slotOf(never || blocked, atMs, nowMs, input, consumed);
  if (slot.admit && slot.atMs > nowMs && !fitsSlot(evaluated, nowMs, slot.atMs, input.cost, costs)) {
    // A credits balance that fits now but not at the slot another policy chose: no slot fits both.
    never = true;
    slot = slotOf(true, atMs, nowMs, input, consumed);
  }

  const changes = record ? new Map<string, StateChange>() : NO_CHANGES;
  // A concurrency policy peeked (its cost 0) takes no lease.
  const usesLease = slot.admit && policies.some((policy, index) => policy.algorithm === "concurrency" && (costs === undefined || costs[index]! > 0));
  if (usesLease && !input.leaseId) throw new Error("a leaseId is needed to admit a concurrency policy");
  const results = evaluated.map((item, index): PolicyDecision => {
    const algorithm = algorithmOf(item.policy);
    const cost = costs === undefined ? input.cost : costs[index]!;
    let state = item.state;
    if (slot.admit && cost > 0) {
      const lease = item.policy.algorithm === "concurrency" ? { leaseId: input.leaseId!, leaseMs: input.leaseMs } : undefined;
      state = algorithm.admit(state, item.policy, nowMs, slot.atMs, cost, lease);
      if (record) changes.set(item.policy.name, stateChange(item.policy, state, item.blockedUntilMs));
    } else if (!slot.allowed && !input.peek && startsBlock(item, state, nowMs)) {
      // This policy refused the request: its block starts now (a peek only reports).
      item.blockedUntilMs = nowMs + item.policy.blockMs!;
      item.earliestMs = blockedEarliestMs(item.earliestMs, item.blockedUntilMs);
      if (record) changes.set(item.policy.name, stateChange(item.policy, state!, item.blockedUntilMs));
    }
    return policyDecision(item, state, slot.admit, nowMs);
  });

  const top = mostRestrictive(results, slot.allowed);
  let retryAfterMs: number | null = 0;
  if (!slot.allowed) {
    retryAfterMs = never ? null : Math.max(1, slot.waitMs);
    if (retryAfterMs !== null) for (const result of results) retryAfterMs = Math.max(retryAfterMs, result.retryAfterMs ?? 0);
  }
  const decision = topDecision(top, slot, retryAfterMs, results);
  if (usesLease) {
    decision.leaseId = input.leaseId;
    decision.leaseMs = input.leaseMs ?? stackLeaseMs(policies);
  }
  return { decision, changes };
}

/** decide()'s changes when it records none (never written to). */
const NO_CHANGES: Map<string, StateChange> = new Map();

/**
 * decide() for a stack of one policy that takes no lease (any algorithm but concurrency),
 * answering only the decision: a store that already recorded the admission itself (the
 * Redis store's single.lua) needs no state changes. The same functions in the same order as
 * decide(), without its arrays, closures and Map: it runs on every Redis decision.
 */
export function decideOne(policy: Policy, stored: StoredState | undefined, nowMs: number, input: CheckOptions): Decision {
  if (policy.algorithm === "concurrency") throw new TypeError("decideOne decides no concurrency policy (leases): use decide");
  if (policy.blockMs !== undefined) throw new TypeError("decideOne decides no policy with a block (its denials write state): use decide");
  const algorithm = algorithmOf(policy);
  const live = liveState(stored, policy, nowMs);
  const earliestMs = algorithm.earliestMs(live, policy, nowMs, probeOf(input.cost));
  const never = earliestMs === null;
  const slot = slotOf(never, never || earliestMs < nowMs ? nowMs : earliestMs, nowMs, input, input.cost > 0);
  const state = slot.admit ? algorithm.admit(live, policy, nowMs, slot.atMs, input.cost, undefined) : live;
  const result = policyDecision({ policy, earliestMs, blockedByQueue: false, blockedUntilMs: undefined }, state, slot.admit, nowMs);
  // decide's retry time for one policy: the policy's own is never below max(1, waitMs).
  const retryAfterMs = slot.allowed ? 0 : result.retryAfterMs;
  return topDecision(result, slot, retryAfterMs, [result]);
}

/**
 * Whether every policy of the stack that is not monotone (credits: Algorithm.fitsAt) still fits
 * `cost` at a later slot; one that does not is marked never (a balance must not go below zero
 * but by a debit). Monotone algorithms fit at any time after their earliest slot.
 */
function fitsSlot(evaluated: Evaluated[], nowMs: number, atMs: number, cost: number, costs: readonly number[] | undefined): boolean {
  let fits = true;
  for (let index = 0; index < evaluated.length; index++) {
    const item = evaluated[index]!;
    const fitsAt = algorithmOf(item.policy).fitsAt;
    const own = costs === undefined ? cost : probeOf(costs[index]!);
    if (!fitsAt || fitsAt(item.state, item.policy, nowMs, atMs, own)) continue;
    item.earliestMs = null;
    fits = false;
  }
  return fits;
}

/** When the request goes: admitted at atMs (a whole-ms slot), now, or not at all. */
interface Slot {
  /** The whole-ms moment the admission is recorded: now + waitMs. */
  atMs: number;
  waitMs: number;
  admit: boolean;
  allowed: boolean;
}

/**
 * The slot of a request whose policies all fit from `earliestMs` on (`shut`: never, or held by
 * waiters). `consumed`: the request costs something (else it peeks: cost 0, or every costs 0).
 */
function slotOf(shut: boolean, earliestMs: number, nowMs: number, input: CheckOptions, consumed: boolean): Slot {
  const waitMs = earliestMs - nowMs <= EPSILON_MS ? 0 : ceilMs(earliestMs - nowMs);
  // The caller acts at now + waitMs (whole ms), so the request is recorded then, not at a
  // fractional earliest moment: recording it earlier would let the next slot come too soon.
  const fitsNow = !shut && waitMs === 0;
  const fitsReserved = !shut && input.mode === "reserve" && waitMs <= input.maxWaitMs;
  // A peek (cost 0) says whether a cost-1 request would be admitted now; it never reserves.
  const admit = consumed && (fitsNow || fitsReserved);
  return { atMs: nowMs + waitMs, waitMs, admit, allowed: consumed ? admit : fitsNow };
}

/** One policy's part of a decision, from its state after the request (admitted or not). */
function policyDecision(item: Pick<Evaluated, "policy" | "earliestMs" | "blockedByQueue" | "blockedUntilMs">, state: AnyState | undefined, admit: boolean, nowMs: number): PolicyDecision {
  const standing = algorithmOf(item.policy).standing(state, item.policy, nowMs);
  const allowedAlone = admit || (item.earliestMs !== null && item.earliestMs - nowMs <= EPSILON_MS && !item.blockedByQueue);
  const result: PolicyDecision = {
    policy: item.policy.name,
    allowed: allowedAlone,
    limit: capacityOf(item.policy),
    remaining: floorCount(standing.remaining),
    resetMs: ceilMs(standing.resetMs),
    retryAfterMs: allowedAlone ? 0 : policyRetryAfterMs(item, nowMs),
  };
  if (item.blockedUntilMs !== undefined) {
    // Blocked: nothing would pass now, and the key is not fresh before the block ends.
    const blockedMs = ceilMs(item.blockedUntilMs - nowMs);
    result.remaining = 0;
    if (blockedMs > result.resetMs) result.resetMs = blockedMs;
    result.blockedMs = blockedMs;
  }
  markWarning(item.policy, result);
  return result;
}

/** A policy's earliest slot, no sooner than its block's end. */
function blockedEarliestMs(earliestMs: number | null, blockedUntilMs: number | undefined): number | null {
  return earliestMs !== null && blockedUntilMs !== undefined && blockedUntilMs > earliestMs ? blockedUntilMs : earliestMs;
}

/**
 * Whether a denied request starts this policy's block: the policy has `block`, none is under
 * way, and the policy itself refused (a later slot, not "never": a cost above capacity is a
 * caller's mistake, not a rate exceeded, and not queued waiters: concurrency has no block).
 */
function startsBlock(item: Evaluated, state: AnyState | undefined, nowMs: number): boolean {
  return item.policy.blockMs !== undefined && item.blockedUntilMs === undefined && state !== undefined && item.earliestMs !== null && item.earliestMs - nowMs > EPSILON_MS;
}

/** The change that stores `state` (with the block to keep), fresh when both are. */
export function stateChange(policy: Policy, state: AnyState, blockedUntilMs: number | undefined): StateChange {
  const freshAtMs = algorithmOf(policy).freshAtMs(state, policy);
  return { stored: wrapState(policy, state, blockedUntilMs), freshAtMs: blockedUntilMs !== undefined && blockedUntilMs > freshAtMs ? blockedUntilMs : freshAtMs };
}

/** The decision, its top level describing policy `top`. */
function topDecision(top: PolicyDecision, slot: Slot, retryAfterMs: number | null, results: PolicyDecision[]): Decision {
  const decision: Decision = {
    allowed: slot.allowed,
    limit: top.limit,
    remaining: top.remaining,
    resetMs: top.resetMs,
    retryAfterMs,
    waitMs: slot.admit ? slot.waitMs : 0,
    policy: top.policy,
    policies: results,
  };
  if (top.blockedMs !== undefined) decision.blockedMs = top.blockedMs;
  markTopWarning(decision);
  return decision;
}

/** A denied policy's own retry time; a queue ahead of it counts as at least 1 ms. */
function policyRetryAfterMs(item: Pick<Evaluated, "earliestMs">, nowMs: number): number | null {
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
