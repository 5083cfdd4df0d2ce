import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { slidingWindowViolation } from "./property-bounds.js";
import { RUNS, policyTraceArb, runTrace } from "./property-helpers.js";

describe("property: sliding-window", () => {
  it("admits at most limit per aligned window and < 2·limit in any span of one period", () => {
    fc.assert(
      fc.property(policyTraceArb("sliding-window"), ({ policy, steps }) => {
        expect(slidingWindowViolation(policy, runTrace([policy], steps).admissions)).toBeNull();
      }),
      RUNS,
    );
  });
});

describe("property: sliding-window is exact", () => {
  it("admits exactly when prev·(1 − elapsed/period) + curr + cost ≤ limit and curr + cost ≤ limit", () => {
    fc.assert(
      fc.property(policyTraceArb("sliding-window", { reserve: false }), ({ policy, steps }) => {
        const { limit, periodMs } = policy;
        const countByWindow = new Map<number, number>();
        for (const { nowMs, input, decision } of runTrace([policy], steps).records) {
          if (input.cost === 0 || input.cost > limit) continue;
          const windowStartMs = Math.floor(nowMs / periodMs) * periodMs;
          const current = countByWindow.get(windowStartMs) ?? 0;
          const previous = countByWindow.get(windowStartMs - periodMs) ?? 0;
          const estimate = previous * (1 - (nowMs - windowStartMs) / periodMs) + current;
          expect(decision.allowed).toBe(current + input.cost <= limit && estimate + input.cost <= limit + 1e-9);
          if (decision.allowed) countByWindow.set(windowStartMs, current + input.cost);
        }
      }),
      RUNS,
    );
  });
});
