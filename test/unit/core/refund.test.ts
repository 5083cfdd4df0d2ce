import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KeyState } from "../../../src/core/key-state.js";
import { policyOf, reject, snapshot } from "./core-helpers.js";
import { RUNS } from "./property-helpers.js";

const T0 = 1_699_920_000_000;

describe("refund (pure core): a negative debit", () => {
  it("refuses a concurrency stack, naming mode, and a spentAtMs that is no time, naming it", () => {
    const key = new KeyState();
    const slots = policyOf({ name: "slots", algorithm: "concurrency", limit: 2 });
    expect(() => key.debit([slots], T0, -1)).toThrow(/^mode: "debit" is not for concurrency policies/);
    const rate = policyOf({ limit: 5, period: "1s" });
    expect(() => key.debit([rate], T0, -1, Number.NaN)).toThrow(/^spentAtMs: must be a time in ms, got NaN/);
    expect(key.states.size).toBe(0);
  });

  it("fixed-window: units spent in a window come back only while it lasts, and only to it", () => {
    const window = policyOf({ algorithm: "fixed-window", limit: 10, period: "1m" });
    const key = new KeyState();
    key.check([window], T0 + 59_000, reject(6)); // spent in [T0, T0 + 1m)
    key.check([window], T0 + 60_000, reject(10)); // the next window, full
    // The answer of the first request lands in the next window: its units were that window's, which is over.
    expect(key.debit([window], T0 + 60_500, -6, T0 + 59_000).decision.remaining).toBe(0);
    // Units spent in the current window come back.
    expect(key.debit([window], T0 + 60_600, -4, T0 + 60_000).decision.remaining).toBe(4);
  });

  it("sliding-window: units go back to the window they were spent in, current or previous", () => {
    const window = policyOf({ algorithm: "sliding-window", limit: 10, period: "1s" });
    const key = new KeyState();
    key.check([window], T0 + 900, reject(10));
    key.check([window], T0 + 1500, { cost: 0, mode: "reject", maxWaitMs: 0 });
    // At 1500 the previous window (10) weighs half: 5 counted. Refunding 4 spent at 900 leaves 6, weighing 3.
    expect(key.debit([window], T0 + 1500, -4, T0 + 900).decision.remaining).toBe(7);
    // Spent two windows ago: nothing to return.
    const before = snapshot(key);
    key.debit([window], T0 + 1600, -4, T0 - 500);
    expect(snapshot(key)).toBe(before);
  });

  it("sliding-log: units go back to their own bucket, not a newer admission's", () => {
    const log = policyOf({ algorithm: "sliding-log", limit: 4, period: "1s" });
    const key = new KeyState();
    key.check([log], T0, reject(2));
    key.check([log], T0 + 500, reject(2));
    // Two spent at T0 come back: the admission at 500 still counts until its own end.
    const after = key.debit([log], T0 + 600, -2, T0).decision;
    expect(after.remaining).toBe(2);
    expect(after.resetMs).toBe(904);
  });

  it("credits with a monthly refill: a refund after the boundary goes nowhere (the refill came)", () => {
    const monthly = policyOf({ algorithm: "credits", limit: 100, refill: { calendar: "month" } });
    const key = new KeyState();
    const endOfMonthMs = Date.UTC(2026, 0, 31, 23, 59);
    key.check([monthly], endOfMonthMs, reject(60));
    const refilled = key.debit([monthly], endOfMonthMs + 120_000, -60, endOfMonthMs).decision;
    expect(refilled.remaining).toBe(100);
    key.check([monthly], endOfMonthMs + 130_000, reject(30));
    expect(key.debit([monthly], endOfMonthMs + 140_000, -30, endOfMonthMs + 130_000).decision.remaining).toBe(100);
  });

  it("never lets a rate admit more than a fresh key: spend x, refund y, then spend what is left (credits: the balance gets y back)", () => {
    const algorithms = ["gcra", "token-bucket", "fixed-window", "sliding-window", "sliding-log", "credits"] as const;
    fc.assert(
      fc.property(fc.constantFrom(...algorithms), fc.integer({ min: 1, max: 20 }), fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 40 }), (algorithm, limit, spent, refunded) => {
        const policy = policyOf(algorithm === "credits" ? { algorithm, limit } : { algorithm, limit, period: "1h" });
        const key = new KeyState();
        const admittedFirst = key.check([policy], T0, reject(Math.min(spent, limit))).decision.allowed ? Math.min(spent, limit) : 0;
        key.debit([policy], T0 + 1, -refunded);
        let admitted = 0;
        while (key.check([policy], T0 + 2, reject(1)).decision.allowed) admitted++;
        if (algorithm === "credits") {
          // A balance is money, not a rate: a refund adds back what it names (a caller refunds what it spent).
          // A key never charged holds its limit, which a refund leaves as it is.
          expect(admitted).toBe(admittedFirst === 0 ? limit : limit - admittedFirst + refunded);
          return;
        }
        // A rate never holds more than a fresh key's capacity, and the refund gave back at most what was spent.
        expect(admitted).toBeLessThanOrEqual(limit);
        expect(admitted).toBe(Math.min(limit, limit - admittedFirst + refunded));
      }),
      RUNS,
    );
  });
});
