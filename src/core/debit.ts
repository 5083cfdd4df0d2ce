import { EPSILON_MS } from "./algorithm.js";
import { type StoredState, algorithmOf, liveBlockMs, liveState } from "./algorithms.js";
import { type DecideOutput, type StateChange, decide, stateChange } from "./decision.js";
import { MAX_COST, debitCosts } from "./costs.js";
import type { DebitCost, Policy } from "./types.js";
import { ValidationError, describeValue } from "./validation.js";

/** What a debit answers: the state after it, as a peek sees it (it never starts a block). */
const AFTER_DEBIT = { cost: 0, mode: "reject", maxWaitMs: 0, peek: true } as const;

/**
 * Refuses a debit on a stack that holds a concurrency policy: a lease is held and released,
 * not spent, so there is nothing to consume past the limit. The field is `mode` because that
 * is how the HTTP API and RPC ask for a debit (`mode: "debit"`).
 */
export function assertDebitable(policies: readonly Policy[]): void {
  for (const policy of policies) {
    if (policy.algorithm === "concurrency") {
      throw new ValidationError("mode", `"debit" is not for concurrency policies ("${policy.name}" holds leases, which are released, not spent)`);
    }
  }
}

/** Whether a cost whose earliest slot is `earliestMs` (null: never) does not fit at nowMs. */
function overdraws(earliestMs: number | null, nowMs: number): boolean {
  return earliestMs === null || earliestMs - nowMs > EPSILON_MS;
}

/**
 * A debit's cost is a signed adjustment: an integer −1e9 … 1e9, a negative one a refund (a store
 * called from plain JavaScript may be handed anything), or one such per policy of the stack
 * (DebitCost; a ValidationError names `cost`, `cost.1` or `cost.<name>`). Answers the cost as
 * the stores send it: one number, or one per policy in stack order (debitCosts).
 */
export function assertDebitCost(cost: DebitCost, policies: readonly Policy[] = []): number | number[] {
  if (typeof cost === "object" && cost !== null) return debitCosts(cost, policies);
  if (!Number.isInteger(cost) || (cost as number) < -MAX_COST || (cost as number) > MAX_COST) throw new ValidationError("cost", `must be an integer from ${-MAX_COST} to ${MAX_COST} (negative: a refund), got ${describeValue(cost)}`);
  return cost as number;
}

/** A time a refund names as when its units were spent: a finite number of ms, or none. */
export function assertSpentAtMs(spentAtMs: number | undefined): void {
  if (spentAtMs !== undefined && !Number.isFinite(spentAtMs)) throw new ValidationError("spentAtMs", `must be a time in ms, got ${describeValue(spentAtMs)}`);
}

/**
 * Consumes `cost` (0 … 1e9) from every policy of the stack at nowMs, even past its limit: the
 * request already happened (the origin answered), so it is recorded whatever the state. Each
 * algorithm's own `admit` at nowMs does it (GCRA moves its tat on, a token bucket goes
 * negative, a window counts past its limit, a sliding log records the entry in its bucket
 * grid, so its state stays at most 65 entries), and since every algorithm is monotone,
 * later requests wait until the debt is repaid. A debit that overdraws a policy with `block`
 * (the cost did not fit: as a check it would have been refused) starts the block. The decision
 * answers the state after the debit as a peek would: `allowed` says whether a cost-1 request
 * would be admitted now.
 *
 * A negative cost is a refund: the units go back to each policy by its own rule (never below
 * empty, never above capacity, only to the window they were spent in: spentAtMs, when given,
 * says which), and the decision answers the state after it the same way.
 *
 * A cost per policy (DebitCost: a list aligned with the stack, or by name) debits, refunds or
 * leaves alone each policy by its own signed cost, still in one step: a multi-measure settle
 * (input tokens over their estimate, output under it) is one debit.
 *
 * @example debit([perMinute], (name) => states.get(name), Date.now(), 120)
 */
export function debit(policies: readonly Policy[], read: (policyName: string) => StoredState | undefined, nowMs: number, cost: DebitCost, spentAtMs?: number): DecideOutput {
  assertDebitable(policies);
  const costs = assertDebitCost(cost, policies);
  assertSpentAtMs(spentAtMs);
  const changes = new Map<string, StateChange>();
  for (let index = 0; index < policies.length; index++) {
    const policy = policies[index]!;
    const own = typeof costs === "number" ? costs : costs[index]!;
    if (own < 0) refundInto(changes, policy, read, nowMs, -own, spentAtMs);
    if (own > 0) {
      const algorithm = algorithmOf(policy);
      const stored = read(policy.name);
      const live = liveState(stored, policy, nowMs);
      let blockedUntilMs = policy.blockMs === undefined ? undefined : liveBlockMs(stored, policy, nowMs);
      if (policy.blockMs !== undefined && blockedUntilMs === undefined && overdraws(algorithm.earliestMs(live, policy, nowMs, own), nowMs)) {
        // A debit this policy would have refused as a check starts its block, as that denial would have.
        blockedUntilMs = nowMs + policy.blockMs;
      }
      changes.set(policy.name, stateChange(policy, algorithm.admit(live, policy, nowMs, nowMs, own, undefined), blockedUntilMs));
    }
  }
  // A null change is a state dropped (a refund that left it fresh): read as none, not as before.
  const readAfter = (name: string): StoredState | undefined => (changes.has(name) ? changes.get(name)?.stored : read(name));
  return { decision: decide(policies, readAfter, nowMs, AFTER_DEBIT).decision, changes };
}

/**
 * Returns `amount` units to one policy (a refund: its algorithm's own rule, see
 * Algorithm.refund), spent at spentAtMs when the caller knows it. A state the refund leaves fresh
 * is dropped; a block under way stays (a refund is not a pardon).
 */
function refundInto(changes: Map<string, StateChange>, policy: Policy, read: (policyName: string) => StoredState | undefined, nowMs: number, amount: number, spentAtMs: number | undefined): void {
  const stored = read(policy.name);
  const live = liveState(stored, policy, nowMs);
  const refunded = live === undefined ? undefined : algorithmOf(policy).refund!(live, policy, nowMs, amount, spentAtMs);
  if (refunded === undefined || refunded === live) return;
  const blockedUntilMs = liveBlockMs(stored, policy, nowMs);
  const change = stateChange(policy, refunded, blockedUntilMs);
  changes.set(policy.name, change && change.freshAtMs <= nowMs ? null : change);
}
