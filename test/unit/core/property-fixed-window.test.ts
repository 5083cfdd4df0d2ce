import { describe, it } from "vitest";
import { assertBound, assertDecidesLikeModel } from "./property-helpers.js";

describe("property: fixed-window", () => {
  it("admits at most limit per aligned window, counting reserved requests at now + waitMs", () => {
    assertBound("fixed-window");
  });

  it("is exact: denies a request only when its aligned window has no room for it", () => {
    assertDecidesLikeModel("fixed-window", (policy) => {
      const countByWindow = new Map<number, number>();
      return (nowMs, cost) => {
        const windowStartMs = Math.floor(nowMs / policy.periodMs) * policy.periodMs;
        const count = countByWindow.get(windowStartMs) ?? 0;
        if (count + cost > policy.limit) return false;
        countByWindow.set(windowStartMs, count + cost);
        return true;
      };
    });
  });
});
