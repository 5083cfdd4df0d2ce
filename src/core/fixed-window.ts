import { type Algorithm, windowStartOf } from "./algorithm.js";
import { calendarWindow } from "./calendar.js";
import type { Policy } from "./types.js";

/** Admitted cost in the window starting at windowStartMs (which may be a future window holding reservations). */
export interface FixedWindowState {
  windowStartMs: number;
  count: number;
}

/** Start of the window holding timeMs: epoch-aligned every periodMs, or the policy's calendar boundary. */
export function fixedWindowStartOf(policy: Policy, timeMs: number): number {
  return policy.calendar ? calendarWindow(policy.calendar, timeMs).startMs : windowStartOf(timeMs, policy.periodMs);
}

/** End of the window that starts at windowStartMs (a boundary): the next boundary. */
export function fixedWindowEndOf(policy: Policy, windowStartMs: number): number {
  return policy.calendar ? calendarWindow(policy.calendar, windowStartMs).endMs : windowStartMs + policy.periodMs;
}

/**
 * At most `limit` admitted cost in each window [k·period, (k+1)·period), aligned to the epoch,
 * or in each calendar window (policy `calendar`: day, week or month in its time zone).
 */
export const fixedWindow: Algorithm<FixedWindowState> = {
  earliestMs(state, policy, nowMs, cost) {
    if (cost > policy.limit) return null;
    if (!state || state.windowStartMs < fixedWindowStartOf(policy, nowMs)) return nowMs;
    if (state.count + cost <= policy.limit) return Math.max(nowMs, state.windowStartMs);
    return fixedWindowEndOf(policy, state.windowStartMs);
  },
  admit(state, policy, _nowMs, atMs, cost) {
    const windowStartMs = fixedWindowStartOf(policy, atMs);
    if (!state || state.windowStartMs < windowStartMs) return { windowStartMs, count: cost };
    return { windowStartMs: state.windowStartMs, count: state.count + cost };
  },
  standing(state, policy, nowMs) {
    const currentStartMs = fixedWindowStartOf(policy, nowMs);
    if (!state || state.windowStartMs < currentStartMs) return { remaining: policy.limit, resetMs: 0 };
    const resetMs = fixedWindowEndOf(policy, state.windowStartMs) - nowMs;
    if (state.windowStartMs > currentStartMs) return { remaining: 0, resetMs };
    return { remaining: Math.max(0, policy.limit - state.count), resetMs };
  },
  freshAtMs(state, policy) {
    return fixedWindowEndOf(policy, state.windowStartMs);
  },
  refund(state, policy, nowMs, amount, spentAtMs) {
    // Only to the window the units were spent in (the state's, when the caller names no time),
    // while that window is current or still to come; the count floors at 0.
    if (!state || state.windowStartMs < fixedWindowStartOf(policy, nowMs)) return state;
    if (spentAtMs !== undefined && fixedWindowStartOf(policy, spentAtMs) !== state.windowStartMs) return state;
    return { windowStartMs: state.windowStartMs, count: Math.max(0, state.count - amount) };
  },
};
