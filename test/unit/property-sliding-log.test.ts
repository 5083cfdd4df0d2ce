import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { slidingLogViolation } from "./property-bounds.js";
import { RUNS, policyTraceArb, runTrace } from "./property-helpers.js";

describe("property: sliding-log", () => {
  it("admits at most limit in every half-open span [x, x + period), counting reserved requests at now + waitMs", () => {
    fc.assert(
      fc.property(policyTraceArb("sliding-log"), ({ policy, steps }) => {
        expect(slidingLogViolation(policy, runTrace([policy], steps).admissions)).toBeNull();
      }),
      RUNS,
    );
  });

  it("is exact: a request is denied only when the half-open span ending at it is full", () => {
    fc.assert(
      fc.property(policyTraceArb("sliding-log", { reserve: false }), ({ policy, steps }) => {
        const run = runTrace([policy], steps);
        const admitted: { atMs: number; cost: number }[] = [];
        for (const { nowMs, input, decision } of run.records) {
          if (input.cost === 0 || input.cost > policy.limit) continue;
          const inWindow = admitted.filter((a) => a.atMs > nowMs - policy.periodMs).reduce((sum, a) => sum + a.cost, 0);
          expect(decision.allowed).toBe(inWindow + input.cost <= policy.limit);
          if (decision.allowed) admitted.push({ atMs: nowMs, cost: input.cost });
        }
      }),
      RUNS,
    );
  });
});
