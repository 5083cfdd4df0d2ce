import { DEFAULT_LEASE_MS } from "../core/policy.js";
import type { Decision, Policy } from "../core/types.js";
import type { Limiter } from "../core/limiter.js";
import { ORIGIN_PAUSE_POLICY } from "./config.js";

/** An origin asking for more than a day is more likely broken than serious: cap the pause. */
export const MAX_ORIGIN_PAUSE_MS = 86_400_000;

/**
 * The pause is stored in the limiter like any policy state, so every gateway instance (every
 * isolate, every Node process on one Redis) sees it. It is a GCRA state with burst 1: one
 * admission sets its theoretical arrival time to now + period, and until then a peek says
 * "denied" with retryAfterMs = the time left. Pauses fail open: feedback is advice.
 */
export function pausePolicy(periodMs: number): Policy {
  return { name: ORIGIN_PAUSE_POLICY, algorithm: "gcra", limit: 1, periodMs, burst: 1, leaseMs: DEFAULT_LEASE_MS, failMode: "open" };
}

/**
 * Parses Retry-After: delay-seconds or an HTTP-date. Returns milliseconds from now, or
 * undefined when absent, unreadable or already past.
 *
 * @example retryAfterMsOf("120", Date.now()) // 120000
 */
export function retryAfterMsOf(value: string | null, nowMs: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  let ms: number;
  if (/^\d+$/.test(text)) {
    ms = Number(text) * 1000;
  } else {
    const at = Date.parse(text);
    if (Number.isNaN(at)) return undefined;
    ms = at - nowMs;
  }
  if (!(ms > 0)) return undefined;
  return Math.min(Math.ceil(ms), MAX_ORIGIN_PAUSE_MS);
}

/** Milliseconds the key is still paused for (0: not paused). Never throws. */
export async function pausedForMs(limiter: Limiter, storeKey: string): Promise<number> {
  try {
    const decision = await limiter.peek(storeKey, [pausePolicy(1000)]);
    return decision.allowed ? 0 : (decision.retryAfterMs ?? 0);
  } catch {
    return 0;
  }
}

/**
 * Pauses the key for `pauseMs`. Reset-then-admit makes the newest Retry-After win, both
 * when it is later and when the origin shortens it. Never throws.
 */
export async function pauseKey(limiter: Limiter, storeKey: string, pauseMs: number): Promise<void> {
  const policy = pausePolicy(pauseMs);
  try {
    await limiter.reset(storeKey, [policy]);
    await limiter.check(storeKey, [policy], { cost: 1, mode: "reject", maxWaitMs: 0 });
  } catch {
    // The next origin 429 will try again.
  }
}

/** The decision a paused key answers with: one denied "origin-retry-after" policy. */
export function pausedDecision(retryAfterMs: number): Decision {
  const result = { policy: ORIGIN_PAUSE_POLICY, allowed: false, limit: 1, remaining: 0, resetMs: retryAfterMs, retryAfterMs };
  return { ...result, waitMs: 0, policies: [result] };
}
