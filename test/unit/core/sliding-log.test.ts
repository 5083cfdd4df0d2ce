import { describe, expect, it } from "vitest";
import { SLIDING_LOG_BUCKETS } from "../../../src/core/sliding-log.js";
import { Subject, expectFreshFrom, peek, policyOf, reject, reserve } from "./core-helpers.js";

// No span [x, x + 1000) may hold more than 3. Buckets of ⌈1000 / 64⌉ = 16 ms: an admission at
// x counts until x + 1000 rounded up to a multiple of 16 (0 → 1008, 100 → 1104, 200 → 1200).
const policy = policyOf({ algorithm: "sliding-log", limit: 3, period: "1s" });

describe("sliding-log: admission and denial", () => {
  it("admits up to limit; resetMs is when the last admission stops counting", () => {
    const subject = new Subject([policy]);
    const decisions = [subject.check(0), subject.check(100), subject.check(200)];
    expect(decisions.map((d) => [d.allowed, d.limit, d.remaining, d.resetMs, d.retryAfterMs])).toEqual([
      [true, 3, 2, 1008, 0],
      [true, 3, 1, 1004, 0],
      [true, 3, 0, 1000, 0],
    ]);
  });

  it("denies until the oldest admission leaves the window, consuming nothing", () => {
    const subject = new Subject([policy]);
    [0, 100, 200].forEach((atMs) => subject.check(atMs));
    const before = subject.snapshot();
    expect(subject.check(500)).toMatchObject({ allowed: false, remaining: 0, resetMs: 700, retryAfterMs: 508 });
    expect(subject.check(1007)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.snapshot()).toBe(before);
    // 1008 + 1000 = 2008, rounded up to 2016.
    expect(subject.check(1008)).toMatchObject({ allowed: true, remaining: 0, resetMs: 1008 });
    expect(subject.check(1050)).toMatchObject({ allowed: false, retryAfterMs: 54 });
  });

  it("is half-open on the bucket grid: an admission at x stops counting at x + period rounded up to a bucket end", () => {
    const subject = new Subject([policyOf({ algorithm: "sliding-log", limit: 1, period: "1s" })]);
    expect(subject.check(0).allowed).toBe(true);
    expect(subject.check(1007)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.check(1008)).toMatchObject({ allowed: true, resetMs: 1008 });
    expect(subject.check(2015)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    // x + period already on the grid (2024 + 1000 = 189 · 16): exactly x + period.
    expect(subject.check(2024)).toMatchObject({ allowed: true, resetMs: 1000 });
    expect(subject.check(3023)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.check(3024).allowed).toBe(true);
  });

  it("frees as many old admissions as a larger cost needs", () => {
    const subject = new Subject([policy]);
    [0, 100, 200].forEach((atMs) => subject.check(atMs));
    expect(subject.check(500, reject(2))).toMatchObject({ allowed: false, retryAfterMs: 604 });
    expect(subject.check(1104, reject(2))).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("merges admissions that stop counting in the same bucket into one entry", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(2, 0);
    subject.check(5); // 1005 → 1008, like 0's
    expect(subject.key.states.get("p")).toEqual({ algorithm: "sliding-log", state: { entries: [[1008, 3, ""]] } });
  });

  it("keeps at most one entry per bucket whatever the limit: 65 for 100,000 admissions a period", () => {
    const big = policyOf({ algorithm: "sliding-log", limit: 100_000, period: "1m" });
    const subject = new Subject([big]);
    // One admission every 10 ms for two minutes: 6,000 distinct times still counting at the end.
    for (let atMs = 0; atMs < 120_000; atMs += 10) subject.key.check([big], atMs, reject());
    const stored = subject.key.states.get("p");
    const entries = stored?.algorithm === "sliding-log" ? stored.state.entries : [];
    expect(entries.length).toBeLessThanOrEqual(SLIDING_LOG_BUCKETS + 1);
    expect(entries.reduce((sum, entry) => sum + entry[1], 0)).toBeGreaterThanOrEqual(6_000);
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
    expect(subject.check(400, peek())).toMatchObject({ allowed: false, remaining: 0, resetMs: 608, retryAfterMs: 608 });
    expect(subject.snapshot()).toBe(before);
  });
});

describe("sliding-log: reserve mode", () => {
  it("reserves the moments old admissions leave the window", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 0);
    expect(subject.check(0, reserve(1, 1007))).toMatchObject({ allowed: false, retryAfterMs: 1008 });
    expect(subject.checkTimes(3, 0, reserve(1, 1008)).map((d) => [d.allowed, d.waitMs, d.remaining])).toEqual([
      [true, 1008, 0],
      [true, 1008, 0],
      [true, 1008, 0],
    ]);
  });

  it("denies, consuming nothing, when the moment is beyond maxWaitMs", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 0);
    subject.check(0, reserve(3, 1008)); // at 1008, until 2016
    const before = subject.snapshot();
    expect(subject.check(0, reserve(1, 2015))).toMatchObject({ allowed: false, waitMs: 0, retryAfterMs: 2016 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(0, reserve(1, 2016))).toMatchObject({ allowed: true, waitMs: 2016 });
  });
});

describe("sliding-log: expiry", () => {
  it("is fresh when the last admission stops counting", () => {
    const subject = new Subject([policy]);
    subject.check(0);
    // 300 + 1000 rounded up to 1312.
    expect(subject.key.check([policy], 300, reject(1)).changes.get("p")?.freshAtMs).toBe(1312);
  });

  it("differs from a fresh key before then and matches it from then on", () => {
    const subject = new Subject([policy]);
    [0, 100, 200].forEach((atMs) => subject.check(atMs));
    expectFreshFrom(subject, 1200);
  });
});
