import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { tokenBucketViolation } from "./property-bounds.js";
import { RUNS, policyTraceArb, runTrace } from "./property-helpers.js";

describe("property: token-bucket", () => {
  it("admits at most burst + limit·(refill ticks) in any span, counting reserved requests at now + waitMs", () => {
    fc.assert(
      fc.property(policyTraceArb("token-bucket"), ({ policy, steps }) => {
        const run = runTrace([policy], steps);
        expect(tokenBucketViolation(policy, run.admissions, run.freshStartsMs.get(policy.name)!)).toBeNull();
      }),
      RUNS,
    );
  });
});
