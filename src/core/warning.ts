import type { Decision, Policy, PolicyDecision } from "./types.js";

/**
 * The smallest use (in cost units) at which a policy warns: at least `warnAt` of `limit`, at
 * least 1. Rounded up from just below the product, so 0.3 × 10 (2.9999… or 3.0000…04 in binary)
 * warns from 3 on, as the user reads it.
 */
export function warnFromUnits(warnAt: number, limit: number): number {
  return Math.max(1, Math.ceil(warnAt * limit - 1e-9));
}

/**
 * Marks a policy's part of a decision with the near-limit warning (SPEC §1 `warnAt`): the key
 * has used at least that share of `limit` in its window (for credits: of its balance's limit).
 * One rule for every store: the core's decisions, the Redis store's (decoded through the core, or
 * rebuilt from check.lua's numbers in codec.ts)
 * and a local cache's batch admissions all pass here.
 */
export function markWarning(policy: Policy, part: PolicyDecision): void {
  if (policy.warnAt !== undefined && part.limit - part.remaining >= warnFromUnits(policy.warnAt, part.limit)) part.warning = true;
}

/** The top level warns when any policy of the stack does. */
export function markTopWarning(decision: Decision): void {
  for (const part of decision.policies) {
    if (part.warning) {
      decision.warning = true;
      return;
    }
  }
}
