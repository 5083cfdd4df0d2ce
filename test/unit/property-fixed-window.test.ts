import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { fixedWindowViolation } from "./property-bounds.js";
import { RUNS, policyTraceArb, runTrace } from "./property-helpers.js";

describe("property: fixed-window", () => {
  it("admits at most limit per aligned window, counting reserved requests at now + waitMs", () => {
    fc.assert(
      fc.property(policyTraceArb("fixed-window"), ({ policy, steps }) => {
        expect(fixedWindowViolation(policy, runTrace([policy], steps).admissions)).toBeNull();
      }),
      RUNS,
    );
  });
});

describe("property: fixed-window is exact", () => {
  it("denies a request only when its aligned window has no room for it", () => {
    fc.assert(
      fc.property(policyTraceArb("fixed-window", { reserve: false }), ({ policy, steps }) => {
        const countByWindow = new Map<number, number>();
        for (const { nowMs, input, decision } of runTrace([policy], steps).records) {
          if (input.cost === 0 || input.cost > policy.limit) continue;
          const windowStartMs = Math.floor(nowMs / policy.periodMs) * policy.periodMs;
          const count = countByWindow.get(windowStartMs) ?? 0;
          expect(decision.allowed).toBe(count + input.cost <= policy.limit);
          if (decision.allowed) countByWindow.set(windowStartMs, count + input.cost);
        }
      }),
      RUNS,
    );
  });
});
