import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { DecideInput } from "../../../src/core/decision.js";
import type { KeyState } from "../../../src/core/key-state.js";
import type { Policy } from "../../../src/core/types.js";
import { cloneKey } from "./core-helpers.js";
import { capacityOf } from "../../../src/core/algorithms.js";
import { RUNS, runTrace, stackTraceArb } from "./property-helpers.js";

/** Whether `input` would be admitted at atMs, asked of a copy of the key. */
function admitsAt(key: KeyState, policies: readonly Policy[], atMs: number, input: DecideInput): boolean {
  return cloneKey(key).check(policies, atMs, { ...input, leaseId: "probe" }).decision.allowed;
}

/** How many cost-1 requests a copy of the key admits at atMs, one after another. */
function admittedInARow(key: KeyState, policy: Policy, atMs: number): number {
  const copy = cloneKey(key);
  let count = 0;
  while (count <= capacityOf(policy) && copy.check([policy], atMs, { cost: 1, mode: "reject", maxWaitMs: 0, leaseId: `probe-${count}` }).decision.allowed) count++;
  return count;
}

const peekRemaining = (key: KeyState, policy: Policy, atMs: number) => cloneKey(key).check([policy], atMs, { cost: 0, mode: "reject", maxWaitMs: 0 }).decision.remaining;

describe("property: decision fields are exact", () => {
  it("retryAfterMs: the same request is admitted after it, and not 1 ms sooner", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        runTrace(policies, steps, 0, ({ nowMs, input, decision }, key) => {
          if (decision.allowed || decision.retryAfterMs === null) return;
          const retry: DecideInput = { cost: Math.max(1, input.cost), mode: "reject", maxWaitMs: 0 };
          expect(admitsAt(key, policies, nowMs + decision.retryAfterMs, retry)).toBe(true);
          if (decision.retryAfterMs > 1) expect(admitsAt(key, policies, nowMs + decision.retryAfterMs - 1, retry)).toBe(false);
        });
      }),
      RUNS,
    );
  });

  it("remaining: exactly that many cost-1 requests are admitted right after, per policy", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        runTrace(policies, steps, 0, ({ nowMs, decision }, key) => {
          policies.forEach((policy, index) => {
            expect(admittedInARow(key, policy, nowMs)).toBe(decision.policies[index]!.remaining);
          });
        });
      }),
      RUNS,
    );
  });

  it("resetMs: each policy is back to full capacity then, and not 1 ms sooner", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        runTrace(policies, steps, 0, ({ nowMs, decision }, key) => {
          policies.forEach((policy, index) => {
            const { resetMs } = decision.policies[index]!;
            expect(peekRemaining(key, policy, nowMs + resetMs)).toBe(capacityOf(policy));
            if (resetMs > 0) expect(peekRemaining(key, policy, nowMs + resetMs - 1)).toBeLessThan(capacityOf(policy));
          });
        });
      }),
      RUNS,
    );
  });

  it("a peek's allowed says whether a cost-1 request would be admitted now", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        runTrace(policies, steps, 0, ({ nowMs, input, decision }, key) => {
          if (input.cost !== 0) return;
          expect(decision.allowed).toBe(admitsAt(key, policies, nowMs, { cost: 1, mode: "reject", maxWaitMs: 0 }));
        });
      }),
      RUNS,
    );
  });
});
