import type { Algorithm } from "./algorithm.js";
import { concurrency, type ConcurrencyState } from "./concurrency.js";
import { fixedWindow, type FixedWindowState } from "./fixed-window.js";
import { gcra, type GcraState } from "./gcra.js";
import { slidingLog, type SlidingLogState } from "./sliding-log.js";
import { slidingWindow, type SlidingWindowState } from "./sliding-window.js";
import { tokenBucket, type TokenBucketState } from "./token-bucket.js";
import type { AlgorithmName, Policy } from "./types.js";

/** The state of one (key, policy) pair, tagged with the algorithm that wrote it. */
export type StoredState =
  | { algorithm: "gcra"; state: GcraState }
  | { algorithm: "token-bucket"; state: TokenBucketState }
  | { algorithm: "fixed-window"; state: FixedWindowState }
  | { algorithm: "sliding-window"; state: SlidingWindowState }
  | { algorithm: "sliding-log"; state: SlidingLogState }
  | { algorithm: "concurrency"; state: ConcurrencyState };

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

export function wrapState(policy: Policy, state: AnyState): StoredState {
  return { algorithm: policy.algorithm, state } as StoredState;
}
