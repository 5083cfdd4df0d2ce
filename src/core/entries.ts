import { EPSILON_MS } from "./algorithm.js";

/**
 * An admitted cost that counts until untilMs: sliding-log admissions (until = at + period,
 * rounded up to the bucket grid: see sliding-log.ts) or a concurrency lease (until =
 * expiry). Kept sorted by untilMs. The lease id is "" for sliding-log entries.
 */
export type Entry = [untilMs: number, cost: number, leaseId: string];

/** Entries still counting at nowMs (untilMs > nowMs: windows are half-open). */
export function liveEntries(entries: readonly Entry[], nowMs: number): Entry[] {
  return entries.filter((entry) => entry[0] > nowMs);
}

export function totalCost(entries: readonly Entry[]): number {
  let sum = 0;
  for (const entry of entries) sum += entry[1];
  return sum;
}

/**
 * Earliest time ≥ nowMs at which `cost` fits under `limit`, dropping entries as they
 * stop counting. Entries reserved for the future count from now, which can only make
 * the answer later, never admit too much.
 */
export function earliestFit(entries: readonly Entry[], limit: number, nowMs: number, cost: number): number | null {
  if (cost > limit) return null;
  const live = liveEntries(entries, nowMs);
  let sum = totalCost(live);
  if (sum + cost <= limit) return nowMs;
  for (const [untilMs, entryCost] of live) {
    sum -= entryCost;
    if (sum + cost <= limit) return Math.max(nowMs, untilMs);
  }
  return null; // unreachable: with every entry gone, cost ≤ limit fits
}

/** Inserts an entry keeping the list sorted by untilMs (stable: equal times keep arrival order). */
export function insertEntry(entries: readonly Entry[], entry: Entry): Entry[] {
  let index = entries.length;
  while (index > 0 && entries[index - 1]![0] > entry[0] + EPSILON_MS) index--;
  return withEntryAt(entries, index, entry);
}

/**
 * A copy of `entries` with `entry` inserted at `index`, exactly as long as it needs to be: a
 * state is kept as it is made, and splice or push would leave room for a dozen more entries
 * in every key's list (the memory store holds one per key: BENCHMARKS.md, "Memory store: bytes per key").
 */
function withEntryAt(entries: readonly Entry[], index: number, entry: Entry): Entry[] {
  // concat spreads an array argument one level: [entry] adds the entry itself.
  return index === entries.length ? entries.concat([entry]) : entries.slice(0, index).concat([entry], entries.slice(index));
}

/**
 * Adds `cost` until untilMs: to the entry that already ends then (sliding-log buckets share
 * one), else as a new entry in sorted place. Bucket ends are whole ms computed the same way
 * everywhere, so they are compared exactly.
 */
export function mergeEntry(entries: readonly Entry[], untilMs: number, cost: number): Entry[] {
  let index = entries.length;
  while (index > 0 && entries[index - 1]![0] > untilMs) index--;
  const same = entries[index - 1];
  if (!same || same[0] !== untilMs) return withEntryAt(entries, index, [untilMs, cost, ""]);
  const next = entries.slice();
  next[index - 1] = [untilMs, same[1] + cost, ""];
  return next;
}

/** The time the last entry stops counting. */
export function lastUntilMs(entries: readonly Entry[]): number {
  let last = 0;
  for (const entry of entries) last = Math.max(last, entry[0]);
  return last;
}

/**
 * `entries` with up to `amount` cost taken back (a sliding log's refund): from the entry that
 * ends at untilMs only, or, without one, from the newest entries first; an entry left with no
 * cost is dropped. Never below empty.
 */
export function takeFromEntries(entries: readonly Entry[], amount: number, untilMs: number | undefined): Entry[] {
  const next = entries.slice();
  let left = amount;
  for (let index = next.length - 1; index >= 0 && left > 0; index--) {
    const [entryUntilMs, cost, leaseId] = next[index]!;
    if (untilMs !== undefined && entryUntilMs !== untilMs) continue;
    const taken = Math.min(cost, left);
    left -= taken;
    if (taken === cost) next.splice(index, 1);
    else next[index] = [entryUntilMs, cost - taken, leaseId];
  }
  return next;
}
