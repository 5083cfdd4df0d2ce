import type { Algorithm } from "./algorithm.js";
import { type Entry, earliestFit, insertEntry, lastUntilMs, liveEntries, totalCost } from "./entries.js";

/** One entry per admission time, sorted; each counts for one period. */
export interface SlidingLogState {
  entries: Entry[];
}

/** Exact sliding log: no span of `period` ever holds more than `limit` admitted cost. */
export const slidingLog: Algorithm<SlidingLogState> = {
  earliestMs(state, policy, nowMs, cost) {
    return earliestFit(state?.entries ?? [], policy.limit, nowMs, cost);
  },
  admit(state, policy, nowMs, atMs, cost) {
    const live = liveEntries(state?.entries ?? [], nowMs);
    const untilMs = atMs + policy.periodMs;
    const last = live[live.length - 1];
    if (last && last[0] === untilMs) {
      // Same admission time: merge, so state grows with distinct times, not with requests.
      return { entries: [...live.slice(0, -1), [untilMs, last[1] + cost, ""]] };
    }
    return { entries: insertEntry(live, [untilMs, cost, ""]) };
  },
  standing(state, policy, nowMs) {
    const live = liveEntries(state?.entries ?? [], nowMs);
    return { remaining: Math.max(0, policy.limit - totalCost(live)), resetMs: Math.max(0, lastUntilMs(live) - nowMs) };
  },
  freshAtMs(state) {
    return lastUntilMs(state.entries);
  },
};
