import type { Policy } from "./types.js";

/**
 * Float tolerance in milliseconds. GCRA and the weighted window work in fractional
 * milliseconds; differences smaller than this are rounding, not time. The Lua scripts
 * use the same constant so every store rounds the same way.
 */
export const EPSILON_MS = 1e-6;

/** Start of the epoch-aligned window of `periodMs` that holds `timeMs` (fixed and sliding windows). */
export function windowStartOf(timeMs: number, periodMs: number): number {
  return Math.floor(timeMs / periodMs) * periodMs;
}

/** Rounds a duration up to whole milliseconds, ignoring float noise. */
export function ceilMs(durationMs: number): number {
  return Math.max(0, Math.ceil(durationMs - EPSILON_MS));
}

/** Rounds a count down, ignoring float noise (2.9999999999 is 3). */
export function floorCount(count: number): number {
  return Math.max(0, Math.floor(count + 1e-9));
}

export interface Standing {
  /** Cost-1 requests that would be admitted at nowMs. */
  remaining: number;
  /** Time until the state is fresh and full again (fractional ms allowed). */
  resetMs: number;
}

/** A lease to record when a concurrency policy admits a request. */
export interface LeaseGrant {
  leaseId: string;
  /** Overrides the policy's lease length. */
  leaseMs?: number;
}

/**
 * One rate-limit algorithm as pure functions of (state, policy, time, cost).
 * `undefined` state means a fresh key. Every algorithm is monotone: if a request fits
 * at time t it fits at any later time, which lets stacked policies be combined by
 * taking the latest of their earliest slots.
 */
export interface Algorithm<S> {
  /** Earliest time ≥ nowMs at which `cost` (≥ 1) fits, or null if it never can. */
  earliestMs(state: S | undefined, policy: Policy, nowMs: number, cost: number): number | null;
  /** Records an admission of `cost` at atMs (≥ earliestMs, ≥ nowMs). Returns the new state. */
  admit(state: S | undefined, policy: Policy, nowMs: number, atMs: number, cost: number, lease: LeaseGrant | undefined): S;
  /** What a cost-1 request would see at nowMs. */
  standing(state: S | undefined, policy: Policy, nowMs: number): Standing;
  /** The time from which the state is equivalent to a fresh one and may be dropped. */
  freshAtMs(state: S, policy: Policy): number;
  /**
   * Only for an algorithm that is not monotone (credits): whether `cost` still fits at atMs, a
   * later slot than nowMs that another policy of the stack chose. Absent: it does.
   */
  fitsAt?(state: S | undefined, policy: Policy, nowMs: number, atMs: number, cost: number): boolean;
  /**
   * Returns `amount` (≥ 1) units spent at spentAtMs (≤ nowMs; a reservation's slot may be later)
   * to the state at nowMs, by the algorithm's own rule: never below its empty state (a window's
   * count floors at 0), never above what it can hold (a bucket caps at its burst), and a window
   * algorithm returns units only to the window they were spent in (an earlier window is over: its
   * units are gone with it). `undefined` state (fresh) stays fresh. Absent for concurrency: a
   * lease is released, not refunded.
   */
  refund?(state: S | undefined, policy: Policy, nowMs: number, amount: number, spentAtMs: number | undefined): S | undefined;
}
