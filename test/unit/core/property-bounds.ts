import type { Policy } from "../../../src/core/types.js";
import type { Admission, TraceRun } from "./property-helpers.js";

/**
 * Each algorithm's promise (README "Algorithms") as a check over admissions at the times their
 * callers act. Every check returns a sentence describing the first violation, or null.
 */

/** Float slack for GCRA's fractional interval; far below one request. */
const SLACK = 1e-6;

const byTime = (admissions: readonly Admission[]) => [...admissions].sort((a, b) => a.atMs - b.atMs);

/** Distinct admission times, ascending. */
const timesOf = (admissions: readonly Admission[]) => [...new Set(admissions.map((a) => a.atMs))].sort((a, b) => a - b);

/** Total cost admitted at times in [fromMs, toMs] (closed) or [fromMs, toMs) (halfOpen). */
function costIn(admissions: readonly Admission[], fromMs: number, toMs: number, halfOpen = false): number {
  let sum = 0;
  for (const { atMs, cost } of admissions) if (atMs >= fromMs && (halfOpen ? atMs < toMs : atMs <= toMs)) sum += cost;
  return sum;
}

/** Checks `allowed(fromMs, toMs, cost)` for every closed span between two admission times. */
function everyClosedSpan(admissions: readonly Admission[], allowed: (fromMs: number, toMs: number, cost: number) => string | null): string | null {
  const times = timesOf(admissions);
  for (let i = 0; i < times.length; i++) {
    for (let j = i; j < times.length; j++) {
      const violation = allowed(times[i]!, times[j]!, costIn(admissions, times[i]!, times[j]!));
      if (violation) return violation;
    }
  }
  return null;
}

/** At most `limit` in each aligned window [k·period, (k+1)·period). */
function alignedWindowViolation(policy: Policy, admissions: readonly Admission[]): string | null {
  const perWindow = new Map<number, number>();
  for (const { atMs, cost } of admissions) {
    const windowStartMs = Math.floor(atMs / policy.periodMs) * policy.periodMs;
    perWindow.set(windowStartMs, (perWindow.get(windowStartMs) ?? 0) + cost);
  }
  for (const [windowStartMs, cost] of perWindow) {
    if (cost > policy.limit) return `window at ${windowStartMs} admitted ${cost} > limit ${policy.limit}`;
  }
  return null;
}

/** GCRA: in any span of length d, admitted ≤ burst + d/T with T = period/limit. */
export function gcraViolation(policy: Policy, admissions: readonly Admission[]): string | null {
  const intervalMs = policy.periodMs / policy.limit;
  return everyClosedSpan(admissions, (fromMs, toMs, cost) =>
    cost <= policy.burst + (toMs - fromMs) / intervalMs + SLACK ? null : `[${fromMs}, ${toMs}] admitted ${cost} > ${policy.burst} + ${toMs - fromMs}/${intervalMs}`,
  );
}

/**
 * Refill ticks in (fromMs, toMs]. Each stretch of state starts on an admission made while
 * the key was fresh; its grid is start + k·period and lasts until the next fresh start.
 */
export function refillTicks(freshStartsMs: readonly number[], periodMs: number, fromMs: number, toMs: number): number {
  let ticks = 0;
  freshStartsMs.forEach((startMs, index) => {
    const lowMs = Math.max(fromMs, startMs);
    const highMs = Math.min(toMs, freshStartsMs[index + 1] ?? Number.POSITIVE_INFINITY);
    if (highMs > lowMs) ticks += Math.floor((highMs - startMs) / periodMs) - Math.floor((lowMs - startMs) / periodMs);
  });
  return ticks;
}

/**
 * Token bucket: admitted ≤ burst + limit · (refill ticks in the span), on the grids the
 * buckets actually used, and (grid-free) ≤ burst + limit · ⌈d/period⌉ for any span of length d.
 */
export function tokenBucketViolation(policy: Policy, admissions: readonly Admission[], freshStartsMs: readonly number[]): string | null {
  return everyClosedSpan(admissions, (fromMs, toMs, cost) => {
    const ticks = refillTicks(freshStartsMs, policy.periodMs, fromMs, toMs);
    if (cost > policy.burst + policy.limit * ticks) return `[${fromMs}, ${toMs}] admitted ${cost} > ${policy.burst} + ${policy.limit}·${ticks} ticks`;
    const anyGridTicks = Math.ceil((toMs - fromMs) / policy.periodMs);
    if (cost > policy.burst + policy.limit * anyGridTicks) return `[${fromMs}, ${toMs}] admitted ${cost} > ${policy.burst} + ${policy.limit}·⌈d/period⌉`;
    return null;
  });
}

export function fixedWindowViolation(policy: Policy, admissions: readonly Admission[]): string | null {
  return alignedWindowViolation(policy, admissions);
}

/** Sliding window: ≤ limit per aligned window and < 2·limit in any closed span of one period. */
export function slidingWindowViolation(policy: Policy, admissions: readonly Admission[]): string | null {
  const aligned = alignedWindowViolation(policy, admissions);
  if (aligned) return aligned;
  for (const fromMs of timesOf(admissions)) {
    const cost = costIn(admissions, fromMs, fromMs + policy.periodMs);
    if (cost >= 2 * policy.limit) return `[${fromMs}, ${fromMs + policy.periodMs}] admitted ${cost} ≥ 2·${policy.limit}`;
  }
  return null;
}

/** Sliding log: ≤ limit in every half-open span [x, x + period). */
export function slidingLogViolation(policy: Policy, admissions: readonly Admission[]): string | null {
  for (const fromMs of timesOf(admissions)) {
    const cost = costIn(admissions, fromMs, fromMs + policy.periodMs, true);
    if (cost > policy.limit) return `[${fromMs}, ${fromMs + policy.periodMs}) admitted ${cost} > ${policy.limit}`;
  }
  return null;
}

/** A slot held over [fromMs, untilMs). */
export interface Hold {
  fromMs: number;
  untilMs: number;
  cost: number;
}

/** Concurrency: the slots held at every instant never exceed limit (the maximum is reached when a hold starts). */
export function holdsViolation(limit: number, holds: readonly Hold[]): string | null {
  for (const { fromMs } of holds) {
    let held = 0;
    for (const hold of holds) if (hold.fromMs <= fromMs && fromMs < hold.untilMs) held += hold.cost;
    if (held > limit) return `at ${fromMs} ${held} slots held > limit ${limit}`;
  }
  return null;
}

/** The bound of any policy over a trace run (concurrency leases here are never released early). */
export function boundViolation(policy: Policy, run: TraceRun): string | null {
  const admissions = byTime(run.admissions);
  switch (policy.algorithm) {
    case "gcra":
      return gcraViolation(policy, admissions);
    case "token-bucket":
      return tokenBucketViolation(policy, admissions, run.freshStartsMs.get(policy.name) ?? []);
    case "fixed-window":
      return fixedWindowViolation(policy, admissions);
    case "sliding-window":
      return slidingWindowViolation(policy, admissions);
    case "sliding-log":
      return slidingLogViolation(policy, admissions);
    case "concurrency":
      return holdsViolation(
        policy.limit,
        admissions.map(({ atMs, cost }) => ({ fromMs: atMs, untilMs: atMs + policy.leaseMs, cost })),
      );
    case "credits": {
      // Without a refill nothing raises a balance in a trace: all it ever admits is its limit.
      if (policy.calendar) return null;
      const spent = admissions.reduce((sum, { cost }) => sum + cost, 0);
      return spent > policy.limit ? `credits spent ${spent} > limit ${policy.limit}` : null;
    }
  }
}
