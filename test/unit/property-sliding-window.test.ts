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
