import { describe, expect, it } from "vitest";
import { DRAIN_AND_PROBE, Subject, compareWithFresh, peek, policyOf, reject, reserve } from "./core-helpers.js";

// No span [x, x + 1000) may hold more than 3.
const policy = policyOf({ algorithm: "sliding-log", limit: 3, period: "1s" });

describe("sliding-log: admission and denial", () => {
  it("admits up to limit; resetMs is when the last admission stops counting", () => {
    const subject = new Subject([policy]);
    const decisions = [subject.check(0), subject.check(100), subject.check(200)];
    expect(decisions.map((d) => [d.allowed, d.limit, d.remaining, d.resetMs, d.retryAfterMs])).toEqual([
      [true, 3, 2, 1000, 0],
      [true, 3, 1, 1000, 0],
      [true, 3, 0, 1000, 0],
    ]);
  });

  it("denies until the oldest admission leaves the window, consuming nothing", () => {
    const subject = new Subject([policy]);
    [0, 100, 200].forEach((atMs) => subject.check(atMs));
    const before = subject.snapshot();
    expect(subject.check(500)).toMatchObject({ allowed: false, remaining: 0, resetMs: 700, retryAfterMs: 500 });
    expect(subject.check(999)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(1000)).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
    expect(subject.check(1050)).toMatchObject({ allowed: false, retryAfterMs: 50 });
  });

  it("is half-open: an admission at x stops counting exactly at x + period", () => {
    const subject = new Subject([policyOf({ algorithm: "sliding-log", limit: 1, period: "1s" })]);
    expect(subject.check(0).allowed).toBe(true);
    expect(subject.check(999)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.check(1000)).toMatchObject({ allowed: true, resetMs: 1000 });
    expect(subject.check(1999)).toMatchObject({ allowed: false, retryAfterMs: 1 });
  });

  it("frees as many old admissions as a larger cost needs", () => {
    const subject = new Subject([policy]);
    [0, 100, 200].forEach((atMs) => subject.check(atMs));
    expect(subject.check(500, reject(2))).toMatchObject({ allowed: false, retryAfterMs: 600 });
    expect(subject.check(1100, reject(2))).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("keeps one entry per admission time, not per request", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 0);
    expect(subject.key.states.get("p")).toEqual({ algorithm: "sliding-log", state: { entries: [[1000, 3, ""]] } });
  });
});

describe("sliding-log: cost edges", () => {
  it("answers retryAfterMs null for a cost above limit", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, reject(4))).toMatchObject({ allowed: false, retryAfterMs: null, remaining: 3 });
    expect(subject.key.states.size).toBe(0);
  });

  it("peeks without consuming", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 0);
    const before = subject.snapshot();
    expect(subject.check(400, peek())).toMatchObject({ allowed: false, remaining: 0, resetMs: 600, retryAfterMs: 600 });
    expect(subject.snapshot()).toBe(before);
  });
});

describe("sliding-log: reserve mode", () => {
  it("reserves the moments old admissions leave the window", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 0);
    expect(subject.checkTimes(3, 0, reserve(1, 1000)).map((d) => [d.allowed, d.waitMs, d.remaining])).toEqual([
      [true, 1000, 0],
      [true, 1000, 0],
      [true, 1000, 0],
    ]);
  });

  it("denies, consuming nothing, when the moment is beyond maxWaitMs", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 0);
    subject.check(0, reserve(3, 1000));
    const before = subject.snapshot();
    expect(subject.check(0, reserve(1, 1999))).toMatchObject({ allowed: false, waitMs: 0, retryAfterMs: 2000 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(0, reserve(1, 2000))).toMatchObject({ allowed: true, waitMs: 2000 });
  });
});

describe("sliding-log: expiry", () => {
  it("is fresh when the last admission stops counting", () => {
    const subject = new Subject([policy]);
    subject.check(0);
    expect(subject.key.check([policy], 300, reject(1)).changes.get("p")?.freshAtMs).toBe(1300);
  });

  it("differs from a fresh key before then and matches it from then on", () => {
    const subject = new Subject([policy]);
    [0, 100, 200].forEach((atMs) => subject.check(atMs));
    const early = compareWithFresh(subject, DRAIN_AND_PROBE, 1199);
    expect(early.old).not.toEqual(early.fresh);
    for (const fromMs of [1200, 1201, 4000]) {
      const { old, fresh } = compareWithFresh(subject, DRAIN_AND_PROBE, fromMs);
      expect(old).toEqual(fresh);
    }
  });
});
