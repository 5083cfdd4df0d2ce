import { describe, expect, it } from "vitest";
import { Subject, expectFreshFrom, peek, policyOf, reject, reserve } from "./core-helpers.js";

// At most 3 in each aligned second [k·1000, (k+1)·1000).
const policy = policyOf({ algorithm: "fixed-window", limit: 3, period: "1s" });

describe("fixed-window: admission and denial", () => {
  it("admits up to limit in the window; resetMs is the window's end", () => {
    const subject = new Subject([policy]);
    expect(subject.checkTimes(3, 100).map((d) => [d.allowed, d.limit, d.remaining, d.resetMs, d.retryAfterMs])).toEqual([
      [true, 3, 2, 900, 0],
      [true, 3, 1, 900, 0],
      [true, 3, 0, 900, 0],
    ]);
  });

  it("denies until the next window, consuming nothing", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 100);
    const before = subject.snapshot();
    expect(subject.check(100)).toMatchObject({ allowed: false, remaining: 0, resetMs: 900, retryAfterMs: 900 });
    expect(subject.check(999)).toMatchObject({ allowed: false, remaining: 0, resetMs: 1, retryAfterMs: 1 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(1000)).toMatchObject({ allowed: true, remaining: 2, resetMs: 1000 });
  });

  it("aligns windows to the epoch (a full window just before a boundary does not carry over)", () => {
    const subject = new Subject([policy]);
    expect(subject.checkTimes(3, 999).every((d) => d.allowed)).toBe(true);
    expect(subject.checkTimes(3, 1000).every((d) => d.allowed)).toBe(true);
    expect(subject.check(1999)).toMatchObject({ allowed: false, retryAfterMs: 1 });
  });

  it("waits for the next window when a larger cost no longer fits", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(2, 100);
    expect(subject.check(100, reject(2))).toMatchObject({ allowed: false, remaining: 1, retryAfterMs: 900 });
    expect(subject.check(100, reject(1))).toMatchObject({ allowed: true, remaining: 0 });
  });
});

describe("fixed-window: cost edges", () => {
  it("answers retryAfterMs null for a cost above limit", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, reject(4))).toMatchObject({ allowed: false, retryAfterMs: null, remaining: 3, resetMs: 0 });
    expect(subject.key.states.size).toBe(0);
    expect(subject.check(0, reject(3))).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
  });

  it("peeks without consuming", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(2, 100);
    const before = subject.snapshot();
    expect(subject.check(200, peek())).toMatchObject({ allowed: true, remaining: 1, resetMs: 800, retryAfterMs: 0 });
    expect(subject.snapshot()).toBe(before);
    subject.check(200);
    expect(subject.check(300, peek())).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 700 });
  });
});

describe("fixed-window: reserve mode", () => {
  it("reserves room in the next window", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 100);
    expect(subject.check(100, reserve(1, 900))).toMatchObject({ allowed: true, waitMs: 900, remaining: 0, resetMs: 1900 });
    expect(subject.check(100, reserve(2, 900))).toMatchObject({ allowed: true, waitMs: 900 });
    expect(subject.check(500, peek())).toMatchObject({ allowed: false, remaining: 0, resetMs: 1500, retryAfterMs: 1500 });
  });

  it("denies, consuming nothing, when the window is beyond maxWaitMs", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 100);
    subject.check(100, reserve(3, 900));
    const before = subject.snapshot();
    expect(subject.check(100, reserve(1, 1899))).toMatchObject({ allowed: false, waitMs: 0, retryAfterMs: 1900 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(100, reserve(1, 1900))).toMatchObject({ allowed: true, waitMs: 1900 });
  });
});

describe("fixed-window: expiry", () => {
  it("is fresh at the end of the window", () => {
    const subject = new Subject([policy]);
    expect(subject.key.check([policy], 100, reject(1)).changes.get("p")?.freshAtMs).toBe(1000);
  });

  it("differs from a fresh key before then and matches it from then on", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 100);
    expectFreshFrom(subject, 1000);
  });
});
