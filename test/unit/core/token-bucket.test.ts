import { describe, expect, it } from "vitest";
import { Subject, expectFreshFrom, peek, policyOf, reject, reserve } from "./core-helpers.js";

// 2 tokens added every second, up to 5.
const policy = policyOf({ algorithm: "token-bucket", limit: 2, period: "1s", burst: 5 });

describe("token-bucket: admission and denial", () => {
  it("starts full: admits the burst at once; resetMs counts the refill ticks to full", () => {
    const subject = new Subject([policy]);
    const decisions = subject.checkTimes(5, 0);
    expect(decisions.map((d) => [d.allowed, d.limit, d.remaining, d.resetMs, d.retryAfterMs])).toEqual([
      [true, 5, 4, 1000, 0],
      [true, 5, 3, 1000, 0],
      [true, 5, 2, 2000, 0],
      [true, 5, 1, 2000, 0],
      [true, 5, 0, 3000, 0],
    ]);
  });

  it("denies until the next refill tick, consuming nothing", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    const before = subject.snapshot();
    expect(subject.check(0)).toMatchObject({ allowed: false, remaining: 0, resetMs: 3000, retryAfterMs: 1000 });
    expect(subject.check(999)).toMatchObject({ allowed: false, remaining: 0, resetMs: 2001, retryAfterMs: 1 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(1000)).toMatchObject({ allowed: true, remaining: 1, resetMs: 2000 });
  });

  it("refills in whole ticks, never in between", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    subject.check(1000);
    expect(subject.check(1500, peek())).toMatchObject({ allowed: true, remaining: 1 });
    expect(subject.check(1500)).toMatchObject({ allowed: true, remaining: 0 });
    expect(subject.check(1500)).toMatchObject({ allowed: false, retryAfterMs: 500 });
    // cost 3 needs two ticks of 2 tokens.
    expect(subject.check(1500, reject(3))).toMatchObject({ allowed: false, retryAfterMs: 1500 });
  });

  it("puts the refill grid on the first admission", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 250);
    expect(subject.check(1249)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.check(1250)).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("caps refills at burst when burst is below limit", () => {
    const subject = new Subject([policyOf({ algorithm: "token-bucket", limit: 5, period: "1s", burst: 2 })]);
    subject.checkTimes(2, 0);
    expect(subject.check(5000, peek())).toMatchObject({ remaining: 2, limit: 2 });
    expect(subject.checkTimes(3, 1000).map((d) => d.allowed)).toEqual([true, true, false]);
  });
});

describe("token-bucket: cost edges", () => {
  it("answers retryAfterMs null for a cost above burst", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, reject(6))).toMatchObject({ allowed: false, retryAfterMs: null, remaining: 5 });
    expect(subject.key.states.size).toBe(0);
    expect(subject.check(0, reject(5))).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("peeks without consuming", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, peek())).toMatchObject({ allowed: true, remaining: 5, resetMs: 0 });
    subject.checkTimes(5, 0);
    const before = subject.snapshot();
    expect(subject.check(500, peek())).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 500, resetMs: 2500 });
    expect(subject.snapshot()).toBe(before);
  });
});

describe("token-bucket: reserve mode", () => {
  it("reserves tokens of future ticks in FIFO order", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    expect(subject.check(0, reserve(1, 1000))).toMatchObject({ allowed: true, waitMs: 1000, remaining: 0, resetMs: 3000 });
    expect(subject.check(0, reserve(1, 1000))).toMatchObject({ allowed: true, waitMs: 1000 });
    expect(subject.check(500, peek())).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1500 });
    // The tick at 1000 is spoken for: a request arriving then waits for the next one.
    expect(subject.clone().check(1000)).toMatchObject({ allowed: false, retryAfterMs: 1000 });
  });

  it("denies, consuming nothing, when the tick is beyond maxWaitMs", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    subject.checkTimes(2, 0, reserve(1, 1000));
    const before = subject.snapshot();
    expect(subject.check(0, reserve(1, 1999))).toMatchObject({ allowed: false, waitMs: 0, retryAfterMs: 2000 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(0, reserve(1, 2000))).toMatchObject({ allowed: true, waitMs: 2000 });
  });
});

describe("token-bucket: expiry", () => {
  it("is fresh once the bucket has refilled to burst", () => {
    const subject = new Subject([policy]);
    expect(subject.key.check([policy], 0, reject(5)).changes.get("p")?.freshAtMs).toBe(3000);
  });

  it("differs from a fresh key before then and matches it from then on", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    expectFreshFrom(subject, 3000);
  });
});
