import { describe, it } from "vitest";
import { assertBound, assertDecidesLikeModel } from "./property-helpers.js";

describe("property: sliding-window", () => {
  it("admits at most limit per aligned window and < 2·limit in any span of one period", () => {
    assertBound("sliding-window");
  });

  it("is exact: admits exactly when prev·(1 − elapsed/period) + curr + cost ≤ limit and curr + cost ≤ limit", () => {
    assertDecidesLikeModel("sliding-window", ({ limit, periodMs }) => {
      const countByWindow = new Map<number, number>();
      return (nowMs, cost) => {
        const windowStartMs = Math.floor(nowMs / periodMs) * periodMs;
        const current = countByWindow.get(windowStartMs) ?? 0;
        const previous = countByWindow.get(windowStartMs - periodMs) ?? 0;
        const estimate = previous * (1 - (nowMs - windowStartMs) / periodMs) + current;
        if (current + cost > limit || estimate + cost > limit + 1e-9) return false;
        countByWindow.set(windowStartMs, current + cost);
        return true;
      };
    });
  });
});
