import type { Algorithm } from "./algorithm.js";
import { concurrency, type ConcurrencyState } from "./concurrency.js";
import { credits, type CreditsState } from "./credits.js";
import { fixedWindow, type FixedWindowState } from "./fixed-window.js";
import { gcra, type GcraState } from "./gcra.js";
import { slidingLog, type SlidingLogState } from "./sliding-log.js";
import { slidingWindow, type SlidingWindowState } from "./sliding-window.js";
import { tokenBucket, type TokenBucketState } from "./token-bucket.js";
import type { AlgorithmName, Policy } from "./types.js";

/**
 * The state of one (key, policy) pair, tagged with the algorithm that wrote it, and the end
 * of the block a denial started (policy `block`), while there is one.
 */
export type StoredState = (
  | { algorithm: "gcra"; state: GcraState }
  | { algorithm: "token-bucket"; state: TokenBucketState }
  | { algorithm: "fixed-window"; state: FixedWindowState }
  | { algorithm: "sliding-window"; state: SlidingWindowState }
  | { algorithm: "sliding-log"; state: SlidingLogState }
  | { algorithm: "concurrency"; state: ConcurrencyState }
  | { algorithm: "credits"; state: CreditsState }
) & { blockedUntilMs?: number };

export type AnyState = StoredState["state"];

/**
 * The most a policy admits at once, which decisions report as its `limit`: the burst of
 * GCRA and token bucket, the limit of every other algorithm.
 */
export function capacityOf(policy: Policy): number {
  return policy.algorithm === "gcra" || policy.algorithm === "token-bucket" ? policy.burst : policy.limit;
}

const IMPLEMENTATIONS: Record<AlgorithmName, Algorithm<AnyState>> = {
  gcra: gcra as Algorithm<AnyState>,
  "token-bucket": tokenBucket as Algorithm<AnyState>,
  "fixed-window": fixedWindow as Algorithm<AnyState>,
  "sliding-window": slidingWindow as Algorithm<AnyState>,
  "sliding-log": slidingLog as Algorithm<AnyState>,
  concurrency: concurrency as Algorithm<AnyState>,
  credits: credits as Algorithm<AnyState>,
};

export function algorithmOf(policy: Policy): Algorithm<AnyState> {
  return IMPLEMENTATIONS[policy.algorithm];
}

/**
 * The live state of a policy at nowMs: undefined when there is none, when it was written
 * by another algorithm (the policy was redefined), or when it is already equivalent to fresh.
 * Dropping fresh state here is what lets every store expire keys at freshAtMs and still
 * agree decision for decision.
 */
export function liveState(stored: StoredState | undefined, policy: Policy, nowMs: number): AnyState | undefined {
  if (!stored || stored.algorithm !== policy.algorithm) return undefined;
  return nowMs >= algorithmOf(policy).freshAtMs(stored.state, policy) ? undefined : stored.state;
}

/**
 * The end of the block the policy holds on the key at nowMs, or undefined: none started, it
 * ended, the policy has no `block` (any more), or the state is another algorithm's.
 */
export function liveBlockMs(stored: StoredState | undefined, policy: Policy, nowMs: number): number | undefined {
  const untilMs = stored?.blockedUntilMs;
  if (untilMs === undefined || policy.blockMs === undefined || stored!.algorithm !== policy.algorithm) return undefined;
  return untilMs > nowMs ? untilMs : undefined;
}

/** A state to store, with the block to keep (undefined: none). */
export function wrapState(policy: Policy, state: AnyState, blockedUntilMs?: number): StoredState {
  const stored = { algorithm: policy.algorithm, state } as StoredState;
  if (blockedUntilMs !== undefined) stored.blockedUntilMs = blockedUntilMs;
  return stored;
}

/** When a stored state (its block included) is equivalent to none and may be dropped. */
export function storedFreshAtMs(stored: StoredState, policy: Policy): number {
  const freshAtMs = algorithmOf(policy).freshAtMs(stored.state, policy);
  return stored.blockedUntilMs !== undefined && stored.blockedUntilMs > freshAtMs ? stored.blockedUntilMs : freshAtMs;
}
