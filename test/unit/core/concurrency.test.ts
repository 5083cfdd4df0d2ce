import { describe, expect, it } from "vitest";
import type { DecideInput } from "../../../src/core/decision.js";
import { KeyState } from "../../../src/core/key-state.js";
import { Subject, expectFreshFrom, peek, policyOf, reject, reserve, snapshot } from "./core-helpers.js";

// 2 holders at once; an unreleased lease expires after 10 s.
const policy = policyOf({ algorithm: "concurrency", limit: 2, lease: "10s" });
const stack = [policy];
const acquire = (leaseId: string, extra: Partial<DecideInput> = {}): DecideInput => ({ ...reject(), leaseId, ...extra });

describe("concurrency: leases", () => {
  it("admits up to limit holders, each with its lease id and length", () => {
    const key = new KeyState();
    const first = key.check(stack, 0, acquire("a")).decision;
    const second = key.check(stack, 0, acquire("b")).decision;
    expect(first).toMatchObject({ allowed: true, limit: 2, remaining: 1, resetMs: 10_000, leaseId: "a", leaseMs: 10_000 });
    expect(second).toMatchObject({ allowed: true, remaining: 0, leaseId: "b" });
  });

  it("denies a third holder until the first lease expires, consuming nothing", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    key.check(stack, 2000, acquire("b"));
    const before = snapshot(key);
    const denied = key.check(stack, 3000, acquire("c")).decision;
    expect(denied).toMatchObject({ allowed: false, remaining: 0, resetMs: 9000, retryAfterMs: 7000 });
    expect(denied.leaseId).toBeUndefined();
    expect(snapshot(key)).toBe(before);
    expect(key.check(stack, 9999, acquire("c")).decision).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(key.check(stack, 10_000, acquire("c")).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("frees a slot on release, once", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    key.check(stack, 0, acquire("b"));
    expect(key.release(stack, "a", 1000).released).toBe(true);
    expect(key.release(stack, "a", 1000).released).toBe(false);
    expect(key.release(stack, "unknown", 1000).released).toBe(false);
    expect(key.check(stack, 1000, peek()).decision).toMatchObject({ allowed: true, remaining: 1 });
    expect(key.check(stack, 1000, acquire("c")).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("deletes the state when the last lease is released", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    const { changes } = key.release(stack, "a", 5);
    expect(changes.get("p")).toBeNull();
    expect(key.states.size).toBe(0);
  });

  it("extends a held lease from now, not from its old expiry", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    key.check(stack, 0, acquire("b"));
    const extended = key.extend(stack, "b", 5000, 10_000);
    expect(extended.extended).toBe(true);
    expect(extended.changes.get("p")?.freshAtMs).toBe(15_000);
    expect(key.check(stack, 10_000, acquire("c")).decision).toMatchObject({ allowed: true, remaining: 0 });
    expect(key.check(stack, 10_000, acquire("d")).decision).toMatchObject({ allowed: false, retryAfterMs: 5000 });
  });

  it("refuses to lengthen leases while a reserved lease waits for a slot, all-or-nothing across the stack", () => {
    const wide = policyOf({ name: "wide", algorithm: "concurrency", limit: 5, lease: "10s" });
    const both = [wide, policy];
    const key = new KeyState();
    key.check(both, 0, acquire("a"));
    key.check(both, 0, acquire("b"));
    // c is promised a's slot at 10 000; making a (or b) last longer would give that slot twice.
    expect(key.check(both, 1000, { ...reserve(1, 9000), leaseId: "c" }).decision).toMatchObject({ allowed: true, waitMs: 9000 });
    const before = snapshot(key);
    expect(key.extend(both, "a", 2000, 10_000)).toMatchObject({ extended: false, changes: new Map() });
    expect(key.extend(both, "b", 2000, 10_000).extended).toBe(false);
    expect(snapshot(key)).toBe(before);
    // Shortening never takes a promised slot.
    expect(key.extend(both, "a", 2000, 1000).extended).toBe(true);
    // Once the reservation no longer over-books the slots, extending works again.
    expect(key.extend(both, "b", 3000, 10_000).extended).toBe(true);
  });

  it("cannot extend or release an expired lease", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    expect(key.extend(stack, "a", 10_000, 10_000).extended).toBe(false);
    expect(key.release(stack, "a", 10_000).released).toBe(false);
  });

  it("uses a per-request lease length when one is given", () => {
    const key = new KeyState();
    const decision = key.check(stack, 0, acquire("a", { leaseMs: 2000 })).decision;
    expect(decision).toMatchObject({ allowed: true, leaseMs: 2000, resetMs: 2000 });
    key.check(stack, 0, acquire("b"));
    expect(key.check(stack, 0, acquire("c")).decision).toMatchObject({ allowed: false, retryAfterMs: 2000 });
  });

  it("refuses to admit without a lease id", () => {
    expect(() => new KeyState().check(stack, 0, reject())).toThrow(/leaseId/);
  });
});

describe("concurrency: cost, peeks and the queue", () => {
  it("answers retryAfterMs null for more slots than the limit", () => {
    const key = new KeyState();
    expect(key.check(stack, 0, acquire("a", { cost: 3 })).decision).toMatchObject({ allowed: false, retryAfterMs: null, remaining: 2 });
    expect(key.states.size).toBe(0);
    expect(key.check(stack, 0, acquire("b", { cost: 2 })).decision).toMatchObject({ allowed: true, remaining: 0 });
  });

  it("peeks without a lease id and without consuming", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    key.check(stack, 0, acquire("b"));
    const before = snapshot(key);
    expect(key.check(stack, 4000, peek()).decision).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 6000, resetMs: 6000 });
    expect(snapshot(key)).toBe(before);
  });

  it("lets nobody pass FIFO waiters queued on the policy", () => {
    const key = new KeyState();
    const decision = key.check(stack, 0, { ...acquire("a"), queuedPolicies: new Set(["p"]) }).decision;
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: 1, remaining: 2 });
    expect(key.states.size).toBe(0);
  });

  it("holds up only concurrency policies: another algorithm's policy of the same name has no waiters", () => {
    const key = new KeyState();
    const redefined = policyOf({ algorithm: "gcra", limit: 2, period: "1s" });
    expect(redefined.name).toBe(policy.name);
    const decision = key.check([redefined], 0, { ...reject(), queuedPolicies: new Set([policy.name]) }).decision;
    expect(decision).toMatchObject({ allowed: true, remaining: 1 });
  });
});

describe("concurrency: reserve mode", () => {
  it("reserves the slot of the lease that expires first", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    key.check(stack, 1000, acquire("b"));
    const reserved = key.check(stack, 2000, { ...reserve(1, 8000), leaseId: "c" }).decision;
    expect(reserved).toMatchObject({ allowed: true, waitMs: 8000, leaseId: "c", remaining: 0 });
    // The reserved lease runs for its full length from its slot.
    expect(key.check(stack, 2000, peek()).decision).toMatchObject({ resetMs: 18_000 });
  });

  it("denies, consuming nothing, when the slot is beyond maxWaitMs", () => {
    const key = new KeyState();
    key.check(stack, 0, acquire("a"));
    key.check(stack, 0, acquire("b"));
    const before = snapshot(key);
    expect(key.check(stack, 0, { ...reserve(1, 9999), leaseId: "c" }).decision).toMatchObject({ allowed: false, waitMs: 0, retryAfterMs: 10_000 });
    expect(snapshot(key)).toBe(before);
  });
});

describe("concurrency: expiry", () => {
  it("is fresh when the last lease expires, and behaves like a fresh key from then on", () => {
    const subject = new Subject(stack);
    subject.check(0);
    const output = subject.key.check(stack, 3000, acquire("x"));
    expect(output.changes.get("p")?.freshAtMs).toBe(13_000);
    const steps: [number, DecideInput][] = [
      [0, reject()],
      [0, reject()],
      [0, reject()],
      [500, peek()],
      [9_999, reject()],
      [10_000, reject()],
    ];
    expectFreshFrom(subject, 13_000, steps);
  });
});
