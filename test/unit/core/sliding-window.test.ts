import { describe, expect, it } from "vitest";
import { Subject, expectFreshFrom, peek, policyOf, reject, reserve } from "./core-helpers.js";

// Estimate at t = prev·(1 − elapsed/1000) + curr; at most 4.
const policy = policyOf({ algorithm: "sliding-window", limit: 4, period: "1s" });

describe("sliding-window: admission and denial", () => {
  it("admits up to limit; resetMs lasts until the window after next", () => {
    const subject = new Subject([policy]);
    expect(subject.checkTimes(4, 0).map((d) => [d.allowed, d.limit, d.remaining, d.resetMs, d.retryAfterMs])).toEqual([
      [true, 4, 3, 2000, 0],
      [true, 4, 2, 2000, 0],
      [true, 4, 1, 2000, 0],
      [true, 4, 0, 2000, 0],
    ]);
  });

  it("denies until the previous window's weight has decayed enough, consuming nothing", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(4, 0);
    const before = subject.snapshot();
    // In the next window 4·(1 − f) + 1 ≤ 4 once f ≥ 0.25, i.e. at 1250.
    expect(subject.check(0)).toMatchObject({ allowed: false, remaining: 0, resetMs: 2000, retryAfterMs: 1250 });
    expect(subject.check(1249)).toMatchObject({ allowed: false, remaining: 0, resetMs: 751, retryAfterMs: 1 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(1250)).toMatchObject({ allowed: true, remaining: 0, resetMs: 1750 });
    expect(subject.check(1500, peek())).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("weights the previous window by the part of it still inside the sliding period", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(2, 500);
    expect(subject.checkTimes(2, 1000).map((d) => [d.allowed, d.remaining])).toEqual([
      [true, 1],
      [true, 0],
    ]);
    // 2·(1 − f) + 2 + 1 ≤ 4 once f ≥ 0.5.
    expect(subject.check(1000)).toMatchObject({ allowed: false, retryAfterMs: 500 });
    expect(subject.check(1500)).toMatchObject({ allowed: true });
  });

  it("never admits more than limit in one aligned window", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(4, 1500);
    // The current window is full: only the next one can take it, after 4·(1 − f) + 1 ≤ 4.
    expect(subject.check(1500)).toMatchObject({ allowed: false, retryAfterMs: 750 });
  });

  it("rounds a fractional retry time up (limit 3: 3·(1 − f) + 1 ≤ 3 at f = 1/3)", () => {
    const subject = new Subject([policyOf({ algorithm: "sliding-window", limit: 3, period: "1s" })]);
    subject.checkTimes(3, 0);
    expect(subject.check(0)).toMatchObject({ allowed: false, retryAfterMs: 1334 });
    expect(subject.check(1333)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.check(1334)).toMatchObject({ allowed: true });
  });
});

describe("sliding-window: cost edges", () => {
  it("answers retryAfterMs null for a cost above limit", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, reject(5))).toMatchObject({ allowed: false, retryAfterMs: null, remaining: 4 });
    expect(subject.key.states.size).toBe(0);
    expect(subject.check(0, reject(4))).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("peeks without consuming", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(4, 0);
    const before = subject.snapshot();
    expect(subject.check(1000, peek())).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 250, resetMs: 1000 });
    expect(subject.check(1500, peek())).toMatchObject({ allowed: true, remaining: 2, retryAfterMs: 0, resetMs: 500 });
    expect(subject.snapshot()).toBe(before);
  });
});

describe("sliding-window: reserve mode", () => {
  it("reserves the moments the estimate leaves room, in order", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(4, 0);
    expect(subject.check(0, reserve(1, 1500))).toMatchObject({ allowed: true, waitMs: 1250, remaining: 0, resetMs: 3000 });
    expect(subject.check(0, reserve(1, 1500))).toMatchObject({ allowed: true, waitMs: 1500 });
  });

  it("denies, consuming nothing, when the moment is beyond maxWaitMs", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(4, 0);
    subject.checkTimes(2, 0, reserve(1, 1500));
    const before = subject.snapshot();
    expect(subject.check(0, reserve(1, 1749))).toMatchObject({ allowed: false, waitMs: 0, retryAfterMs: 1750 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(0, reserve(1, 1750))).toMatchObject({ allowed: true, waitMs: 1750 });
  });
});

describe("sliding-window: expiry", () => {
  it("is fresh once both windows' weights are gone", () => {
    const subject = new Subject([policy]);
    expect(subject.key.check([policy], 300, reject(1)).changes.get("p")?.freshAtMs).toBe(2000);
  });

  it("differs from a fresh key before then and matches it from then on", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(4, 0);
    expectFreshFrom(subject, 2000);
  });
});
