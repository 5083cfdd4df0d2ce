import { EPSILON_MS } from "./algorithm.js";
import { type StoredState, algorithmOf, liveBlockMs, liveState } from "./algorithms.js";
import { type DecideOutput, type StateChange, decide, stateChange } from "./decision.js";
import type { Policy } from "./types.js";
import { ValidationError, describeValue } from "./validation.js";

/** The largest cost of one request (SPEC §2). */
const MAX_COST = 1e9;

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

/** A debit's cost is a request's: an integer 0 … 1e9 (a store called from plain JavaScript may be handed anything). */
export function assertDebitCost(cost: number): void {
  if (!Number.isInteger(cost) || cost < 0 || cost > MAX_COST) throw new ValidationError("cost", `must be an integer from 0 to ${MAX_COST}, got ${describeValue(cost)}`);
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
 * @example debit([perMinute], (name) => states.get(name), Date.now(), 120)
 */
export function debit(policies: readonly Policy[], read: (policyName: string) => StoredState | undefined, nowMs: number, cost: number): DecideOutput {
  assertDebitable(policies);
  assertDebitCost(cost);
  const changes = new Map<string, StateChange>();
  if (cost > 0) {
    for (const policy of policies) {
      const algorithm = algorithmOf(policy);
      const stored = read(policy.name);
      const live = liveState(stored, policy, nowMs);
      let blockedUntilMs = policy.blockMs === undefined ? undefined : liveBlockMs(stored, policy, nowMs);
      if (policy.blockMs !== undefined && blockedUntilMs === undefined && overdraws(algorithm.earliestMs(live, policy, nowMs, cost), nowMs)) {
        // A debit this policy would have refused as a check starts its block, as that denial would have.
        blockedUntilMs = nowMs + policy.blockMs;
      }
      changes.set(policy.name, stateChange(policy, algorithm.admit(live, policy, nowMs, nowMs, cost, undefined), blockedUntilMs));
    }
  }
  const readAfter = (name: string) => {
    const change = changes.get(name);
    return change ? change.stored : read(name);
  };
  return { decision: decide(policies, readAfter, nowMs, AFTER_DEBIT).decision, changes };
}
