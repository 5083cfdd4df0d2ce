import { type Algorithm, windowStartOf } from "./algorithm.js";

/** Admitted cost in the window starting at windowStartMs (which may be a future window holding reservations). */
export interface FixedWindowState {
  windowStartMs: number;
  count: number;
}

/** At most `limit` admitted cost in each window [k·period, (k+1)·period), aligned to the epoch. */
export const fixedWindow: Algorithm<FixedWindowState> = {
  earliestMs(state, policy, nowMs, cost) {
    if (cost > policy.limit) return null;
    if (!state || state.windowStartMs < windowStartOf(nowMs, policy.periodMs)) return nowMs;
    if (state.count + cost <= policy.limit) return Math.max(nowMs, state.windowStartMs);
    return state.windowStartMs + policy.periodMs;
  },
  admit(state, policy, _nowMs, atMs, cost) {
    const windowStartMs = windowStartOf(atMs, policy.periodMs);
    if (!state || state.windowStartMs < windowStartMs) return { windowStartMs, count: cost };
    return { windowStartMs: state.windowStartMs, count: state.count + cost };
  },
  standing(state, policy, nowMs) {
    const currentStartMs = windowStartOf(nowMs, policy.periodMs);
    if (!state || state.windowStartMs < currentStartMs) return { remaining: policy.limit, resetMs: 0 };
    const resetMs = state.windowStartMs + policy.periodMs - nowMs;
    if (state.windowStartMs > currentStartMs) return { remaining: 0, resetMs };
    return { remaining: Math.max(0, policy.limit - state.count), resetMs };
  },
  freshAtMs(state, policy) {
    return state.windowStartMs + policy.periodMs;
  },
};
