import type { Algorithm } from "./algorithm.js";
import { type Entry, earliestFit, lastUntilMs, liveEntries, mergeEntry, takeFromEntries, totalCost } from "./entries.js";

/**
 * Buckets per period. An admission's end is rounded up to a grid of period / SLIDING_LOG_BUCKETS
 * (whole ms), so admissions that end in the same bucket share one entry and a state holds at
 * most SLIDING_LOG_BUCKETS + 1 live entries whatever the limit: a decision's cost no longer
 * grows with the log (BENCHMARKS.md, "Sliding log").
 */
export const SLIDING_LOG_BUCKETS = 64;

/** The grid step of a period's buckets: period / SLIDING_LOG_BUCKETS rounded up to whole ms. */
export function slidingLogBucketMs(periodMs: number): number {
  return Math.max(1, Math.ceil(periodMs / SLIDING_LOG_BUCKETS));
}

/**
 * When an admission at atMs stops counting: atMs + period rounded up to the bucket grid,
 * aligned to absolute time so every store (and every process) lands on the same entries.
 * Counting it longer than exactly atMs + period can only deny more, never admit more: no
 * span of period ever holds more than limit. Example: period 1000 ms → 16 ms buckets; an
 * admission at 5 counts until 1008 (⌈1005 / 16⌉ · 16), one at 8 until 1008 too (one entry).
 */
export function slidingLogUntilMs(atMs: number, periodMs: number): number {
  const bucketMs = slidingLogBucketMs(periodMs);
  return Math.ceil((atMs + periodMs) / bucketMs) * bucketMs;
}

/** Entries of admitted cost, sorted by untilMs, at most one per bucket of the grid. */
export interface SlidingLogState {
  entries: Entry[];
}

/**
 * Sliding log on a bucket grid: no span of `period` ever holds more than `limit` admitted
 * cost, and an admission stops counting at most one bucket (period / 64, whole ms) after
 * at + period.
 */
export const slidingLog: Algorithm<SlidingLogState> = {
  earliestMs(state, policy, nowMs, cost) {
    return earliestFit(state?.entries ?? [], policy.limit, nowMs, cost);
  },
  admit(state, policy, nowMs, atMs, cost) {
    const live = liveEntries(state?.entries ?? [], nowMs);
    return { entries: mergeEntry(live, slidingLogUntilMs(atMs, policy.periodMs), cost) };
  },
  standing(state, policy, nowMs) {
    const live = liveEntries(state?.entries ?? [], nowMs);
    return { remaining: Math.max(0, policy.limit - totalCost(live)), resetMs: Math.max(0, lastUntilMs(live) - nowMs) };
  },
  freshAtMs(state) {
    return lastUntilMs(state.entries);
  },
  refund(state, policy, nowMs, amount, spentAtMs) {
    // From the bucket the units were spent in (an admission at spentAtMs counts in the entry
    // that ends at its grid point), or, when the caller names no time, from the newest entries.
    if (!state) return undefined;
    const live = liveEntries(state.entries, nowMs);
    const untilMs = spentAtMs === undefined ? undefined : slidingLogUntilMs(spentAtMs, policy.periodMs);
    return { entries: takeFromEntries(live, amount, untilMs) };
  },
};
