import { describe, expect, it } from "vitest";
import { Subject, expectFreshFrom, peek, policyOf, reject, reserve } from "./core-helpers.js";

// limit 5 per second: emission interval T = 200 ms, burst defaults to 5.
const policy = policyOf({ algorithm: "gcra", limit: 5, period: "1s" });

describe("gcra: admission and denial", () => {
  it("admits a burst of 5 at once, each spending one interval of reset", () => {
    const subject = new Subject([policy]);
    const decisions = subject.checkTimes(5, 0);
    expect(decisions.map((d) => [d.allowed, d.remaining, d.resetMs, d.retryAfterMs])).toEqual([
      [true, 4, 200, 0],
      [true, 3, 400, 0],
      [true, 2, 600, 0],
      [true, 1, 800, 0],
      [true, 0, 1000, 0],
    ]);
    expect(decisions[0]).toMatchObject({ limit: 5, waitMs: 0, policy: "p" });
  });

  it("denies the 6th with the exact time until one interval has passed, consuming nothing", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    const before = subject.snapshot();
    expect(subject.check(0)).toMatchObject({ allowed: false, remaining: 0, resetMs: 1000, retryAfterMs: 200, waitMs: 0 });
    expect(subject.check(150)).toMatchObject({ allowed: false, remaining: 0, resetMs: 850, retryAfterMs: 50 });
    expect(subject.check(199)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(200)).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000, retryAfterMs: 0 });
  });

  it("recovers one request per interval", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    expect(subject.check(600, peek())).toMatchObject({ allowed: true, remaining: 3, resetMs: 400 });
  });

  it("waits for cost·T of room for a larger request", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(3, 0); // tat = 600
    // cost 3 fits once tat + 3T − 5T ≤ now, i.e. at 200.
    expect(subject.check(100, reject(3))).toMatchObject({ allowed: false, remaining: 2, retryAfterMs: 100 });
    expect(subject.check(200, reject(3))).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
  });

  it("rounds a fractional interval up (limit 3 per second: T = 333.3 ms)", () => {
    const subject = new Subject([policyOf({ algorithm: "gcra", limit: 3, period: "1s" })]);
    const burst = subject.checkTimes(3, 0);
    expect(burst.map((d) => d.resetMs)).toEqual([334, 667, 1000]);
    expect(subject.check(0)).toMatchObject({ allowed: false, retryAfterMs: 334 });
    expect(subject.check(333)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(subject.check(334)).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("reports burst as the limit when it differs from limit", () => {
    const subject = new Subject([policyOf({ algorithm: "gcra", limit: 10, period: "1s", burst: 2 })]);
    expect(subject.checkTimes(2, 0).map((d) => [d.limit, d.remaining])).toEqual([
      [2, 1],
      [2, 0],
    ]);
    expect(subject.check(0)).toMatchObject({ allowed: false, limit: 2, retryAfterMs: 100 });
  });
});

describe("gcra: cost edges", () => {
  it("answers retryAfterMs null for a cost above burst and stores nothing", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, reject(6))).toMatchObject({ allowed: false, retryAfterMs: null, remaining: 5, resetMs: 0 });
    expect(subject.key.states.size).toBe(0);
    expect(subject.check(0, reject(5))).toMatchObject({ allowed: true, remaining: 0, resetMs: 1000 });
  });

  it("peeks with cost 0: reports a cost-1 answer and changes nothing", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, peek())).toMatchObject({ allowed: true, remaining: 5, resetMs: 0, retryAfterMs: 0 });
    expect(subject.key.states.size).toBe(0);
    subject.checkTimes(5, 0);
    const before = subject.snapshot();
    expect(subject.check(50, peek())).toMatchObject({ allowed: false, remaining: 0, resetMs: 950, retryAfterMs: 150 });
    expect(subject.check(50, peek())).toMatchObject({ allowed: false, retryAfterMs: 150 });
    expect(subject.snapshot()).toBe(before);
  });
});

describe("gcra: reserve mode", () => {
  it("admits for the next free slots and answers waitMs", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    expect(subject.check(0, reserve(1, 500))).toMatchObject({ allowed: true, waitMs: 200, retryAfterMs: 0, remaining: 0, resetMs: 1200 });
    expect(subject.check(0, reserve(1, 500))).toMatchObject({ allowed: true, waitMs: 400, resetMs: 1400 });
  });

  it("denies, consuming nothing, when the slot is beyond maxWaitMs", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    subject.check(0, reserve(1, 500));
    subject.check(0, reserve(1, 500));
    const before = subject.snapshot();
    expect(subject.check(0, reserve(1, 599))).toMatchObject({ allowed: false, waitMs: 0, retryAfterMs: 600 });
    expect(subject.snapshot()).toBe(before);
    expect(subject.check(0, reserve(1, 600))).toMatchObject({ allowed: true, waitMs: 600 });
  });

  it("answers waitMs 0 when the request fits now", () => {
    const subject = new Subject([policy]);
    expect(subject.check(0, reserve(2, 1000))).toMatchObject({ allowed: true, waitMs: 0, remaining: 3 });
  });

  it("rounds a fractional slot up and accounts for the request at that slot", () => {
    // T = 333.3 ms, burst 1: slots at 0, 334, 667 would put 3 requests into 667 ms.
    const subject = new Subject([policyOf({ algorithm: "gcra", limit: 3, period: "1s", burst: 1 })]);
    expect(subject.check(0)).toMatchObject({ allowed: true });
    expect(subject.check(0, reserve(1, 10_000))).toMatchObject({ allowed: true, waitMs: 334 });
    // The caller acts at 334, so the next slot is one interval after 334, not after 333.3.
    expect(subject.check(0, reserve(1, 10_000))).toMatchObject({ allowed: true, waitMs: 668 });
  });
});

describe("gcra: expiry", () => {
  it("reports the time the state becomes fresh and drops it then", () => {
    const subject = new Subject([policy]);
    const output = subject.key.check([policy], 0, reject(5));
    expect(output.changes.get("p")?.freshAtMs).toBe(1000);
  });

  it("differs from a fresh key before then and matches it from then on", () => {
    const subject = new Subject([policy]);
    subject.checkTimes(5, 0);
    expectFreshFrom(subject, 1000);
  });
});

describe("gcra: today's clock values", () => {
  // Doubles near 1.7e12 ms are 2.4e-4 ms apart: a tat of now + k·166.67 cannot be stored exactly.
  const sixths = policyOf({ algorithm: "gcra", limit: 6, period: "1s" });
  const nowsMs = Array.from({ length: 20 }, (_, i) => 1_763_728_252_123 + i * 7919);

  it("counts remaining requests and reset exactly whatever the clock reads", () => {
    for (const nowMs of nowsMs) {
      const subject = new Subject([sixths]);
      const burst = subject.checkTimes(6, nowMs).map((d) => [d.remaining, d.resetMs]);
      expect([nowMs, burst]).toEqual([nowMs, [[5, 167], [4, 334], [3, 500], [2, 667], [1, 834], [0, 1000]]]);
      expect([nowMs, subject.check(nowMs + 166, peek())]).toMatchObject([nowMs, { remaining: 0, resetMs: 834 }]);
      expect([nowMs, subject.check(nowMs + 167, peek())]).toMatchObject([nowMs, { remaining: 1, resetMs: 833 }]);
    }
  });

  it("admits a request whose slot is exactly now, and the next one T later", () => {
    for (const nowMs of nowsMs) {
      const subject = new Subject([sixths]);
      subject.checkTimes(6, nowMs);
      expect([nowMs, subject.check(nowMs + 1000, reject(6))]).toMatchObject([nowMs, { allowed: true, remaining: 0, resetMs: 1000 }]);
      expect([nowMs, subject.check(nowMs + 1166)]).toMatchObject([nowMs, { allowed: false, retryAfterMs: 1 }]);
      expect([nowMs, subject.check(nowMs + 1167)]).toMatchObject([nowMs, { allowed: true, remaining: 0 }]);
    }
  });
});
