import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { KeyState } from "../../../src/core/key-state.js";
import type { Policy } from "../../../src/core/types.js";
import { type Hold, holdsViolation } from "./property-bounds.js";
import { RUNS, policyArb } from "./property-helpers.js";

type Op =
  | { kind: "acquire"; gapMs: number; cost: number; mode: "reject" | "reserve"; maxWaitMs: number; leaseMs: number | undefined }
  | { kind: "release"; gapMs: number; target: number }
  | { kind: "extend"; gapMs: number; target: number; leaseMs: number };

const opArb = (limit: number): fc.Arbitrary<Op> => {
  const gapMs = fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 80 }));
  return fc.oneof(
    { weight: 3, arbitrary: fc.record({ kind: fc.constant("acquire" as const), gapMs, cost: fc.integer({ min: 0, max: limit + 1 }), mode: fc.constantFrom("reject" as const, "reserve" as const), maxWaitMs: fc.integer({ min: 0, max: 100 }), leaseMs: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }) }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("release" as const), gapMs, target: fc.nat() }) },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant("extend" as const), gapMs, target: fc.nat(), leaseMs: fc.integer({ min: 1, max: 60 }) }) },
  );
};

const scenarioArb = policyArb("concurrency").chain((policy) => fc.record({ policy: fc.constant(policy), ops: fc.array(opArb(policy.limit), { maxLength: 50 }) }));

/** A lease as the caller sees it: held from its slot until released, extended or expired. */
interface ModelLease extends Hold {
  id: string;
  released: boolean;
}

/** Runs the ops, checking each answer against a model of leases; returns the holds. */
function runLeases(policy: Policy, ops: readonly Op[]): ModelLease[] {
  const stack = [policy];
  const key = new KeyState();
  const leases: ModelLease[] = [];
  const liveAt = (lease: ModelLease, nowMs: number) => !lease.released && lease.untilMs > nowMs;
  let nowMs = 0;
  ops.forEach((op, index) => {
    nowMs += op.gapMs;
    if (op.kind === "acquire") {
      const leaseId = `lease-${index}`;
      const { decision } = key.check(stack, nowMs, { cost: op.cost, mode: op.mode, maxWaitMs: op.maxWaitMs, leaseId, leaseMs: op.leaseMs });
      if (op.mode === "reject" && op.cost >= 1 && op.cost <= policy.limit) {
        // Exact: reserved leases count from the moment they are granted.
        const heldNow = leases.filter((lease) => liveAt(lease, nowMs)).reduce((sum, lease) => sum + lease.cost, 0);
        expect(decision.allowed).toBe(heldNow + op.cost <= policy.limit);
      }
      if (decision.allowed && op.cost > 0) {
        expect(decision.leaseId).toBe(leaseId);
        const fromMs = nowMs + decision.waitMs;
        leases.push({ id: leaseId, fromMs, untilMs: fromMs + (op.leaseMs ?? policy.leaseMs), cost: op.cost, released: false });
      }
      return;
    }
    const lease = leases[op.target % Math.max(1, leases.length)];
    const id = lease?.id ?? "never-granted";
    const wasLive = lease !== undefined && liveAt(lease, nowMs);
    if (op.kind === "release") {
      expect(key.release(stack, id, nowMs).released).toBe(wasLive);
      if (lease && wasLive) {
        lease.released = true;
        lease.untilMs = Math.min(lease.untilMs, nowMs);
      }
    } else {
      // Lengthening is refused while reserved leases wait on expiries (more leases live than slots).
      const liveCost = leases.filter((other) => liveAt(other, nowMs)).reduce((sum, other) => sum + other.cost, 0);
      const refused = lease !== undefined && nowMs + op.leaseMs > lease.untilMs && liveCost > policy.limit;
      expect(key.extend(stack, id, nowMs, op.leaseMs).extended).toBe(wasLive && !refused);
      if (lease && wasLive && !refused) lease.untilMs = nowMs + op.leaseMs;
    }
  });
  return leases;
}

describe("property: concurrency", () => {
  it("never holds more than limit slots at any instant, with acquires, releases, extensions and expiry", () => {
    fc.assert(
      fc.property(scenarioArb, ({ policy, ops }) => {
        const leases = runLeases(policy, ops);
        expect(holdsViolation(policy.limit, leases.filter((lease) => lease.untilMs > lease.fromMs))).toBeNull();
      }),
      RUNS,
    );
  });
});
