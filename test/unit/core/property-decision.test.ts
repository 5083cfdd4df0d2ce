import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Decision, PolicyDecision } from "../../../src/core/types.js";
import { capacityOf } from "../../../src/core/algorithms.js";
import { decideOne } from "../../../src/core/decision.js";
import { KeyState } from "../../../src/core/key-state.js";
import { ALL_ALGORITHMS, RUNS, inputOf, policyTraceArb, runTrace, stackTraceArb } from "./property-helpers.js";

const isWholeMs = (value: number) => Number.isSafeInteger(value) && value >= 0;

function expectWholeFields(fields: Omit<PolicyDecision, "policy">): void {
  expect(isWholeMs(fields.limit) && isWholeMs(fields.remaining) && isWholeMs(fields.resetMs)).toBe(true);
  expect(fields.retryAfterMs === null || isWholeMs(fields.retryAfterMs)).toBe(true);
  expect(fields.remaining).toBeLessThanOrEqual(fields.limit);
}

describe("property: decisions", () => {
  it("are whole milliseconds and counts ≥ 0, with retryAfterMs 0 exactly when allowed", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        for (const { input, decision } of runTrace(policies, steps).records) {
          expectWholeFields(decision);
          decision.policies.forEach(expectWholeFields);
          expect(isWholeMs(decision.waitMs)).toBe(true);
          if (decision.allowed) {
            expect(decision.retryAfterMs).toBe(0);
            expect(decision.waitMs).toBeLessThanOrEqual(input.mode === "reserve" ? input.maxWaitMs : 0);
          } else {
            expect(decision.waitMs).toBe(0);
            expect(decision.retryAfterMs === null || decision.retryAfterMs >= 1).toBe(true);
          }
          decision.policies.forEach((p) => expect(p.allowed ? p.retryAfterMs === 0 : p.retryAfterMs !== 0).toBe(true));
        }
      }),
      RUNS,
    );
  });

  it("answer retryAfterMs null exactly when the cost exceeds some policy's capacity", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        for (const { input, decision } of runTrace(policies, steps).records) {
          const never = policies.some((policy) => input.cost > capacityOf(policy));
          expect(decision.retryAfterMs === null).toBe(never);
          expect(decision.policies.map((p) => p.retryAfterMs === null)).toEqual(policies.map((policy) => input.cost > capacityOf(policy)));
        }
      }),
      RUNS,
    );
  });

  it("are deterministic: the same trace gives the same decisions and states", () => {
    fc.assert(
      fc.property(stackTraceArb(), fc.integer({ min: 0, max: 2e12 }), ({ policies, steps }, startMs) => {
        const first = runTrace(policies, steps, startMs);
        const second = runTrace(policies, steps, startMs);
        const decisions = (run: typeof first): Decision[] => run.records.map((r) => r.decision);
        expect(decisions(second)).toEqual(decisions(first));
        expect([...second.key.states]).toEqual([...first.key.states]);
      }),
      RUNS,
    );
  });

  it("are the same when the whole trace moves by whole periods, up to today's clock values", () => {
    fc.assert(
      fc.property(stackTraceArb(), fc.integer({ min: 1_600_000_000_000, max: 2_000_000_000_000 }), ({ policies, steps }, aroundMs) => {
        // Every period divides their product, so aligned windows move by whole windows.
        const productMs = policies.reduce((product, p) => product * p.periodMs, 1);
        const shiftMs = productMs * Math.max(1, Math.floor(aroundMs / productMs));
        const base = runTrace(policies, steps, 0).records.map((r) => r.decision);
        const shifted = runTrace(policies, steps, shiftMs).records.map((r) => r.decision);
        expect(shifted).toEqual(base);
      }),
      RUNS,
    );
  });

  // decideOne is what the Redis store answers for a stack of one policy: it must be decide().
  for (const algorithm of ALL_ALGORITHMS.filter((name) => name !== "concurrency")) {
    it(`of one ${algorithm} policy: decideOne answers exactly what decide does, field order included`, () => {
      fc.assert(
        fc.property(policyTraceArb(algorithm), fc.integer({ min: 0, max: 2e12 }), ({ policy, steps }, startMs) => {
          const key = new KeyState();
          let nowMs = startMs;
          for (const step of steps) {
            nowMs += step.gapMs;
            const stored = key.states.get(policy.name);
            const expected = key.check([policy], nowMs, inputOf(step)).decision;
            const answered = decideOne(policy, stored, nowMs, inputOf(step));
            expect(JSON.stringify(answered)).toBe(JSON.stringify(expected));
          }
        }),
        RUNS,
      );
    });
  }

  it("decideOne refuses a concurrency policy (leases need decide)", () => {
    const [policy] = fc.sample(policyTraceArb("concurrency"), { numRuns: 1, seed: 1 }).map((run) => run.policy);
    expect(() => decideOne(policy!, undefined, 0, { cost: 1, mode: "reject", maxWaitMs: 0 })).toThrow(/concurrency/);
  });
});
