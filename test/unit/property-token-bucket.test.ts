import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Policy } from "../../src/core/types.js";
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

/** A bucket refilled on its grid; it forgets its grid (and starts a new one) once full. */
class ModelBucket {
  private readonly policy: Policy;
  private anchorMs = 0;
  private tokens: number | undefined;
  constructor(policy: Policy) {
    this.policy = policy;
  }

  /** Rolls refills up to nowMs and answers whether `cost` is admitted, taking it if so. */
  take(nowMs: number, cost: number): boolean {
    const { limit, periodMs, burst } = this.policy;
    if (this.tokens !== undefined) {
      const ticks = Math.floor((nowMs - this.anchorMs) / periodMs);
      this.tokens = Math.min(burst, this.tokens + ticks * limit);
      this.anchorMs += ticks * periodMs;
      if (this.tokens === burst) this.tokens = undefined;
    }
    const available = this.tokens ?? burst;
    if (available < cost) return false;
    if (this.tokens === undefined) this.anchorMs = nowMs;
    this.tokens = available - cost;
    return true;
  }
}

describe("property: token-bucket is exact", () => {
  it("admits exactly when a bucket refilled with limit tokens every period holds the cost", () => {
    fc.assert(
      fc.property(policyTraceArb("token-bucket", { reserve: false }), ({ policy, steps }) => {
        const model = new ModelBucket(policy);
        for (const { nowMs, input, decision } of runTrace([policy], steps).records) {
          if (input.cost === 0 || input.cost > policy.burst) continue;
          expect(decision.allowed).toBe(model.take(nowMs, input.cost));
        }
      }),
      RUNS,
    );
  });
});
