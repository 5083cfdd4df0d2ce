import { describe, expect, it } from "vitest";
import { KeyState } from "../../../src/core/key-state.js";
import { Subject, peek, policyOf, reject, reserve, snapshot } from "./core-helpers.js";

const perSecond = policyOf({ name: "per-second", algorithm: "fixed-window", limit: 2, period: "1s" });
// Its buckets are ⌈60000 / 64⌉ = 938 ms: admissions at 0, 1000 and 2000 count until 60032,
// 61908 and 62846 (each + 60000, rounded up to a multiple of 938).
const perMinute = policyOf({ name: "per-minute", algorithm: "sliding-log", limit: 5, period: "1m" });
const stack = [perSecond, perMinute];

describe("stacked policies: all-or-nothing", () => {
  it("consumes from every policy when all admit", () => {
    const key = new KeyState();
    const output = key.check(stack, 0, reject());
    expect(output.decision.allowed).toBe(true);
    expect([...output.changes.keys()].sort()).toEqual(["per-minute", "per-second"]);
    expect(output.decision.policies.map((p) => [p.policy, p.remaining])).toEqual([
      ["per-second", 1],
      ["per-minute", 4],
    ]);
  });

  it("consumes from none when one denies", () => {
    const subject = new Subject(stack);
    subject.checkTimes(2, 0);
    const before = subject.snapshot();
    const output = subject.key.check(stack, 500, reject());
    expect(output.changes.size).toBe(0);
    expect(subject.snapshot()).toBe(before);
    expect(output.decision.policies).toEqual([
      { policy: "per-second", allowed: false, limit: 2, remaining: 0, resetMs: 500, retryAfterMs: 500 },
      { policy: "per-minute", allowed: true, limit: 5, remaining: 3, resetMs: 59_532, retryAfterMs: 0 },
    ]);
  });

  it("does not spend the per-second budget on a request the per-minute policy refuses", () => {
    const subject = new Subject(stack);
    subject.checkTimes(2, 0);
    subject.checkTimes(2, 1000);
    expect(subject.check(2000)).toMatchObject({ allowed: true, policy: "per-minute", remaining: 0 });
    expect(subject.check(2000)).toMatchObject({ allowed: false, policy: "per-minute", retryAfterMs: 58_032 });
    expect(subject.key.check([perSecond], 2000, peek()).decision).toMatchObject({ allowed: true, remaining: 1 });
  });

  it("never admits when one policy can never take the cost", () => {
    const subject = new Subject(stack);
    const decision = subject.check(0, reject(3));
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: null, policy: "per-second" });
    expect(decision.policies.map((p) => [p.allowed, p.retryAfterMs])).toEqual([
      [false, null],
      [true, 0],
    ]);
    expect(subject.key.states.size).toBe(0);
  });

  it("keeps a concurrency lease and a rate policy all-or-nothing too", () => {
    const slots = policyOf({ name: "slots", algorithm: "concurrency", limit: 1 });
    const mixed = [slots, perMinute];
    const key = new KeyState();
    expect(key.check(mixed, 0, { ...reject(), leaseId: "a" }).decision).toMatchObject({ allowed: true, leaseId: "a", leaseMs: 30_000 });
    const before = snapshot(key);
    expect(key.check(mixed, 0, { ...reject(), leaseId: "b" }).decision).toMatchObject({ allowed: false, policy: "slots", retryAfterMs: 30_000 });
    expect(snapshot(key)).toBe(before);
    expect(key.release(mixed, "a", 10).released).toBe(true);
    expect(key.check([perMinute], 10, peek()).decision.remaining).toBe(4);
  });
});

describe("stacked policies: top-level fields", () => {
  it("describe the policy that frees up last when denied", () => {
    const subject = new Subject(stack);
    subject.checkTimes(2, 0);
    subject.checkTimes(2, 1000);
    subject.check(2000);
    // Both deny a cost of 2 at 2500: per-second frees at 3000, per-minute at 60 032.
    const decision = subject.check(2500, reject(2));
    expect(decision).toMatchObject({ allowed: false, policy: "per-minute", limit: 5, remaining: 0, resetMs: 60_346, retryAfterMs: 57_532 });
  });

  it("describe the policy with the fewest remaining when allowed, ties keeping stack order", () => {
    expect(new Subject(stack).check(0)).toMatchObject({ policy: "per-second", remaining: 1, limit: 2, resetMs: 1000 });
    expect(new Subject([perMinute, perSecond]).check(0)).toMatchObject({ policy: "per-second", remaining: 1 });
    const twin = policyOf({ name: "twin", algorithm: "fixed-window", limit: 2, period: "1s" });
    expect(new Subject([perSecond, twin]).check(0).policy).toBe("per-second");
    expect(new Subject([twin, perSecond]).check(0).policy).toBe("twin");
  });

  it("waits for the latest of the policies' slots in reserve mode", () => {
    const spaced = policyOf({ name: "spaced", algorithm: "gcra", limit: 1, period: "1s", burst: 1 });
    const subject = new Subject([spaced, perMinute]);
    subject.check(0);
    expect(subject.check(0, reserve(1, 5000))).toMatchObject({ allowed: true, waitMs: 1000, retryAfterMs: 0 });
    expect(subject.key.check([perMinute], 0, peek()).decision.remaining).toBe(3);
    expect(subject.check(0, reserve(1, 1999))).toMatchObject({ allowed: false, retryAfterMs: 2000 });
    expect(subject.key.check([perMinute], 0, peek()).decision.remaining).toBe(3);
  });
});

describe("stacked policies: state per (key, policy name)", () => {
  it("shares counters between a policy checked alone and in a stack", () => {
    const key = new KeyState();
    key.check([perMinute], 0, reject());
    key.check([perMinute], 0, reject());
    expect(key.check(stack, 0, reject()).decision.policies[1]).toMatchObject({ policy: "per-minute", remaining: 2 });
    expect(key.check([perMinute, perSecond], 0, reject()).decision.policies[0]).toMatchObject({ policy: "per-minute", remaining: 1 });
    expect(key.check([perSecond], 0, peek()).decision).toMatchObject({ allowed: false, remaining: 0 });
    expect(key.check([perMinute], 0, peek()).decision).toMatchObject({ allowed: true, remaining: 1 });
    expect([...key.states.keys()].sort()).toEqual(["per-minute", "per-second"]);
  });

  it("peeks a stack without touching any policy", () => {
    const subject = new Subject(stack);
    subject.check(0);
    const afterOne = subject.snapshot();
    expect(subject.check(0, peek())).toMatchObject({ allowed: true, remaining: 1, policy: "per-second" });
    expect(subject.snapshot()).toBe(afterOne);
    subject.check(0);
    const afterTwo = subject.snapshot();
    expect(subject.check(0, peek())).toMatchObject({ allowed: false, retryAfterMs: 1000, policy: "per-second" });
    expect(subject.snapshot()).toBe(afterTwo);
  });
});
