import { type Algorithm, floorCount } from "./algorithm.js";
import type { Policy } from "./types.js";

/** GCRA keeps one number: the theoretical arrival time of the next request. */
export interface GcraState {
  tatMs: number;
}

/**
 * tat − now in units of 1/limit ms, as a whole number of units. Admissions are recorded at
 * whole-ms slots and each adds cost·period/limit, so the exact backlog is always a whole
 * number of units; rounding to it drops the float noise a tat near today's clock carries
 * (doubles around 1.7e12 are 2.4e-4 ms apart), which would otherwise leak into remaining,
 * retryAfterMs and resetMs and make decisions depend on the epoch.
 */
function backlogUnits(state: GcraState | undefined, policy: Policy, nowMs: number): number {
  if (!state) return 0;
  return Math.max(0, Math.round((state.tatMs - nowMs) * policy.limit));
}

/**
 * Generic Cell Rate Algorithm. Emission interval T = period/limit; a request of cost c
 * fits while tat + c·T − now ≤ burst·T, so up to `burst` requests may arrive at once and
 * the rest are spaced T apart. Offsets are computed in units of T/period = 1/limit ms.
 */
export const gcra: Algorithm<GcraState> = {
  earliestMs(state, policy, nowMs, cost) {
    if (cost > policy.burst) return null;
    const waitUnits = backlogUnits(state, policy, nowMs) + (cost - policy.burst) * policy.periodMs;
    return nowMs + Math.max(0, waitUnits) / policy.limit;
  },
  admit(state, policy, _nowMs, atMs, cost) {
    // max(tat, at) + cost·T, rebuilt from the slot so rounding never accumulates.
    return { tatMs: atMs + (backlogUnits(state, policy, atMs) + cost * policy.periodMs) / policy.limit };
  },
  standing(state, policy, nowMs) {
    const units = backlogUnits(state, policy, nowMs);
    return { remaining: floorCount((policy.burst * policy.periodMs - units) / policy.periodMs), resetMs: units / policy.limit };
  },
  freshAtMs(state) {
    return state.tatMs;
  },
  refund(state, policy, nowMs, amount) {
    // The backlog shrinks by amount·T, never below none (tat = now: fresh).
    if (!state) return undefined;
    const units = Math.max(0, backlogUnits(state, policy, nowMs) - amount * policy.periodMs);
    return { tatMs: nowMs + units / policy.limit };
  },
};
