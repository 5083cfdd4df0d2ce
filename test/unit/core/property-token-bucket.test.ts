import { describe, it } from "vitest";
import type { Policy } from "../../../src/core/types.js";
import { assertBound, assertDecidesLikeModel } from "./property-helpers.js";

describe("property: token-bucket", () => {
  it("admits at most burst + limit·(refill ticks) in any span, counting reserved requests at now + waitMs", () => {
    assertBound("token-bucket");
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
    assertDecidesLikeModel("token-bucket", (policy) => {
      const model = new ModelBucket(policy);
      return (nowMs, cost) => model.take(nowMs, cost);
    });
  });
});
