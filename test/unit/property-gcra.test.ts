import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { gcraViolation } from "./property-bounds.js";
import { RUNS, policyArb, policyTraceArb, runTrace } from "./property-helpers.js";

describe("property: gcra", () => {
  it("admits at most burst + d/T in any span of length d, counting reserved requests at now + waitMs", () => {
    fc.assert(
      fc.property(policyTraceArb("gcra"), ({ policy, steps }) => {
        expect(gcraViolation(policy, runTrace([policy], steps).admissions)).toBeNull();
      }),
      RUNS,
    );
  });

  it("admits a full burst at once on a fresh key and then exactly one request per interval", () => {
    fc.assert(
      fc.property(policyArb("gcra"), (policy) => {
        const intervalMs = policy.periodMs / policy.limit;
        const steps = Array.from({ length: policy.burst }, () => ({ gapMs: 0, cost: 1, mode: "reject" as const, maxWaitMs: 0 }));
        const burst = runTrace([policy], steps).records.map((r) => r.decision.allowed);
        expect(burst.every(Boolean)).toBe(true);
        const waitMs = Math.ceil(intervalMs - 1e-6);
        const paced = runTrace([policy], [...steps, { gapMs: 0, cost: 1, mode: "reserve", maxWaitMs: waitMs }]).records.at(-1)!.decision;
        expect(paced).toMatchObject({ allowed: true, waitMs });
      }),
      RUNS,
    );
  });
});
