import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { SLIDING_LOG_BUCKETS } from "../../../src/core/sliding-log.js";
import { parsePolicy } from "../../../src/core/policy.js";
import type { Policy } from "../../../src/core/types.js";
import { slidingLogViolation } from "./property-bounds.js";
import { RUNS, type TraceStep, assertBound, runTrace, stepArb } from "./property-helpers.js";

/**
 * The rule as README states it, written out here rather than imported: an admission at x
 * counts until x + period rounded up to a multiple of ⌈period / 64⌉ ms (at least 1 ms).
 */
function countsUntilMs(policy: Policy, atMs: number): number {
  const bucketMs = Math.max(1, Math.ceil(policy.periodMs / 64));
  return Math.ceil((atMs + policy.periodMs) / bucketMs) * bucketMs;
}

/**
 * Periods long enough for buckets wider than 1 ms (up to 32 ms), and a random start so the
 * grid falls anywhere in a trace. `crowded`: limits above the bucket count and steps about
 * a bucket apart, so more distinct admission times count at once than there are buckets.
 */
function bucketedTraceArb(options: { reserve: boolean; crowded?: boolean }): fc.Arbitrary<{ policy: Policy; steps: TraceStep[]; startMs: number }> {
  const limit = options.crowded ? fc.integer({ min: 100, max: 1000 }) : fc.integer({ min: 1, max: 40 });
  const periodMs = options.crowded ? fc.integer({ min: 500, max: 2000 }) : fc.integer({ min: 1, max: 2000 });
  return fc.record({ limit, periodMs, startMs: fc.integer({ min: 0, max: 100_000 }) }).chain(({ limit, periodMs, startMs }) => {
    const policy = parsePolicy({ name: "p", algorithm: "sliding-log", limit, period: periodMs }, "policy");
    const step = options.crowded
      ? stepArb(1, Math.ceil(periodMs / 50))
      : // Gaps mostly well under a bucket, sometimes a period or two.
        fc.oneof({ arbitrary: stepArb(limit, Math.ceil(periodMs / 16)), weight: 4 }, { arbitrary: stepArb(limit, 2 * periodMs), weight: 1 });
    return fc.record({
      policy: fc.constant(policy),
      startMs: fc.constant(startMs),
      steps: fc
        .array(step, { minLength: options.crowded ? 200 : 10, maxLength: options.crowded ? 400 : 120, size: "max" })
        .map((steps) => (options.reserve ? steps : steps.map((s) => ({ ...s, mode: "reject" as const })))),
    });
  });
}

describe("property: sliding-log", () => {
  it("admits at most limit in every half-open span [x, x + period), counting reserved requests at now + waitMs", () => {
    assertBound("sliding-log");
  });

  it("admits at most limit in every half-open span of period with buckets wider than 1 ms, reserve included", () => {
    fc.assert(
      fc.property(bucketedTraceArb({ reserve: true }), ({ policy, steps, startMs }) => {
        expect(slidingLogViolation(policy, runTrace([policy], steps, startMs).admissions)).toBeNull();
      }),
      RUNS,
    );
  });

  it("denies exactly when the admissions still counting (until x + period, rounded up to a bucket) leave no room", () => {
    fc.assert(
      fc.property(bucketedTraceArb({ reserve: false }), ({ policy, steps, startMs }) => {
        const run = runTrace([policy], steps, startMs);
        const admitted: { untilMs: number; cost: number }[] = [];
        for (const { nowMs, input, decision } of run.records) {
          if (input.cost === 0 || input.cost > policy.limit) continue;
          const counting = admitted.filter((a) => a.untilMs > nowMs).reduce((sum, a) => sum + a.cost, 0);
          expect(decision.allowed).toBe(counting + input.cost <= policy.limit);
          if (decision.allowed) {
            const untilMs = countsUntilMs(policy, nowMs);
            // Never less than a period, and less than one bucket more.
            expect(untilMs - nowMs).toBeGreaterThanOrEqual(policy.periodMs);
            expect(untilMs - nowMs).toBeLessThan(policy.periodMs + Math.max(1, Math.ceil(policy.periodMs / 64)));
            admitted.push({ untilMs, cost: input.cost });
          }
        }
      }),
      RUNS,
    );
  });

  it(`keeps at most ${SLIDING_LOG_BUCKETS} + 1 live entries, and with reservations one entry per bucket end`, () => {
    fc.assert(
      fc.property(bucketedTraceArb({ reserve: true }), ({ policy, steps, startMs }) => {
        const bucketMs = Math.max(1, Math.ceil(policy.periodMs / SLIDING_LOG_BUCKETS));
        let latestAtMs = Number.NEGATIVE_INFINITY;
        runTrace([policy], steps, startMs, ({ nowMs, input, decision }, key) => {
          if (decision.allowed && input.cost > 0) latestAtMs = Math.max(latestAtMs, nowMs + decision.waitMs);
          const stored = key.states.get("p");
          if (stored?.algorithm !== "sliding-log") return;
          const live = stored.state.entries.filter(([untilMs]) => untilMs > nowMs);
          const reservedAheadMs = Math.max(0, latestAtMs - nowMs);
          // Distinct bucket ends, sorted: merged, never one entry per admission.
          for (const [index, [untilMs]] of live.entries()) {
            expect(untilMs % bucketMs).toBe(0);
            if (index > 0) expect(untilMs).toBeGreaterThan(live[index - 1]![0]);
          }
          // Bucket ends in (now, ⌈(latest admission + period) / bucket⌉ · bucket]: at most N + 1,
          // plus one per bucket that reservations reach past now.
          expect(live.length).toBeLessThanOrEqual(SLIDING_LOG_BUCKETS + 1 + Math.ceil(reservedAheadMs / bucketMs));
        });
      }),
      RUNS,
    );
  });

  it(`keeps at most ${SLIDING_LOG_BUCKETS} + 1 live entries when every request is checked now (no reservation), whatever the limit`, () => {
    fc.assert(
      fc.property(bucketedTraceArb({ reserve: false, crowded: true }), ({ steps, startMs, policy }) => {
        runTrace([policy], steps, startMs, ({ nowMs }, key) => {
          const stored = key.states.get("p");
          const entries = stored?.algorithm === "sliding-log" ? stored.state.entries : [];
          expect(entries.filter(([untilMs]) => untilMs > nowMs).length).toBeLessThanOrEqual(SLIDING_LOG_BUCKETS + 1);
        });
      }),
      // Long traces: a third of the runs keeps the unit project fast.
      { numRuns: Math.ceil(RUNS.numRuns / 3) },
    );
  });
});
