import { type Algorithm, floorCount, windowStartOf } from "./algorithm.js";

/**
 * Counts of the window starting at windowStartMs and of the one before it.
 * The estimate at time t is prev·(1 − elapsed/period) + curr.
 */
export interface SlidingWindowState {
  windowStartMs: number;
  prevCount: number;
  currCount: number;
}

/** The state as seen from the window that holds timeMs (never moves a future window back). */
function rollTo(state: SlidingWindowState, periodMs: number, timeMs: number): SlidingWindowState {
  const startMs = windowStartOf(timeMs, periodMs);
  if (startMs <= state.windowStartMs) return state;
  if (startMs === state.windowStartMs + periodMs) return { windowStartMs: startMs, prevCount: state.currCount, currCount: 0 };
  return { windowStartMs: startMs, prevCount: 0, currCount: 0 };
}

function estimate(state: SlidingWindowState, periodMs: number, timeMs: number): number {
  const elapsed = Math.min(1, Math.max(0, (timeMs - state.windowStartMs) / periodMs));
  return state.prevCount * (1 - elapsed) + state.currCount;
}

/**
 * Weighted two-window counter (O(1) state, approximate). It assumes the previous window's
 * admissions were spread evenly. Bounds: each aligned window admits at most `limit`, and any
 * span of one period admits less than 2·limit (see README, "Limits").
 */
export const slidingWindow: Algorithm<SlidingWindowState> = {
  earliestMs(state, policy, nowMs, cost) {
    if (cost > policy.limit) return null;
    if (!state) return nowMs;
    const { limit, periodMs } = policy;
    const fromMs = Math.max(nowMs, state.windowStartMs);
    const rolled = rollTo(state, periodMs, fromMs);
    if (rolled.currCount + cost > limit) {
      // Only the next window can take it, once this window's weight has decayed enough.
      const fraction = 1 - (limit - cost) / rolled.currCount;
      return rolled.windowStartMs + periodMs + fraction * periodMs;
    }
    if (estimate(rolled, periodMs, fromMs) + cost <= limit + 1e-9) return fromMs;
    const fraction = 1 - (limit - cost - rolled.currCount) / rolled.prevCount;
    return Math.max(fromMs, rolled.windowStartMs + fraction * periodMs);
  },
  admit(state, policy, _nowMs, atMs, cost) {
    const start = state ?? { windowStartMs: windowStartOf(atMs, policy.periodMs), prevCount: 0, currCount: 0 };
    const rolled = rollTo(start, policy.periodMs, atMs);
    return { ...rolled, currCount: rolled.currCount + cost };
  },
  standing(state, policy, nowMs) {
    if (!state) return { remaining: policy.limit, resetMs: 0 };
    const rolled = rollTo(state, policy.periodMs, nowMs);
    const remaining = nowMs < rolled.windowStartMs ? 0 : floorCount(policy.limit - estimate(rolled, policy.periodMs, nowMs));
    return { remaining, resetMs: Math.max(0, slidingWindow.freshAtMs(rolled, policy) - nowMs) };
  },
  refund(state, policy, nowMs, amount, spentAtMs) {
    // From the count of the window the units were spent in (the current one, when the caller
    // names no time): the current window's or the previous one's, floored at 0.
    if (!state) return undefined;
    const rolled = rollTo(state, policy.periodMs, nowMs);
    const spentStartMs = spentAtMs === undefined ? rolled.windowStartMs : windowStartOf(spentAtMs, policy.periodMs);
    if (spentStartMs === rolled.windowStartMs) return { ...rolled, currCount: Math.max(0, rolled.currCount - amount) };
    if (spentStartMs === rolled.windowStartMs - policy.periodMs) return { ...rolled, prevCount: Math.max(0, rolled.prevCount - amount) };
    return rolled;
  },
  freshAtMs(state, policy) {
    if (state.currCount > 0) return state.windowStartMs + 2 * policy.periodMs;
    if (state.prevCount > 0) return state.windowStartMs + policy.periodMs;
    return state.windowStartMs;
  },
};
