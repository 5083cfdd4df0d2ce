import { type Algorithm, floorCount } from "./algorithm.js";

/** GCRA keeps one number: the theoretical arrival time of the next request. */
export interface GcraState {
  tatMs: number;
}

const emissionIntervalMs = (limit: number, periodMs: number) => periodMs / limit;

/**
 * Generic Cell Rate Algorithm. Emission interval T = period/limit; a request of cost c
 * fits while tat + c·T − now ≤ burst·T, so up to `burst` requests may arrive at once and
 * the rest are spaced T apart.
 */
export const gcra: Algorithm<GcraState> = {
  earliestMs(state, policy, nowMs, cost) {
    if (cost > policy.burst) return null;
    const intervalMs = emissionIntervalMs(policy.limit, policy.periodMs);
    const tatMs = state?.tatMs ?? nowMs;
    return Math.max(nowMs, tatMs + cost * intervalMs - policy.burst * intervalMs);
  },
  admit(state, policy, _nowMs, atMs, cost) {
    const intervalMs = emissionIntervalMs(policy.limit, policy.periodMs);
    return { tatMs: Math.max(state?.tatMs ?? atMs, atMs) + cost * intervalMs };
  },
  standing(state, policy, nowMs) {
    if (!state) return { remaining: policy.burst, resetMs: 0 };
    const intervalMs = emissionIntervalMs(policy.limit, policy.periodMs);
    const backlogMs = Math.max(0, state.tatMs - nowMs);
    return { remaining: floorCount(policy.burst - backlogMs / intervalMs), resetMs: backlogMs };
  },
  freshAtMs(state) {
    return state.tatMs;
  },
};
