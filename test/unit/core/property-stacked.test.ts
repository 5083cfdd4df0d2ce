import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { boundViolation } from "./property-bounds.js";
import { RUNS, stackTraceArb, runTrace } from "./property-helpers.js";

describe("property: stacked policies", () => {
  it("a denial consumes from no policy; an admission consumes from every policy", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        for (const { input, decision, stateChanged, written } of runTrace(policies, steps).records) {
          if (!decision.allowed || input.cost === 0) {
            expect(stateChanged).toBe(false);
            expect(written).toEqual([]);
          } else {
            expect(written.sort()).toEqual(policies.map((p) => p.name).sort());
          }
        }
      }),
      RUNS,
    );
  });

  it("admits in reject mode exactly when every policy would admit alone", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        for (const { input, decision } of runTrace(policies, steps).records) {
          if (input.mode !== "reject") continue;
          expect(decision.allowed).toBe(decision.policies.every((p) => p.allowed));
        }
      }),
      RUNS,
    );
  });

  it("keeps every policy's bound over what the stack admitted (reserved requests at now + waitMs)", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        const run = runTrace(policies, steps);
        for (const policy of policies) expect({ policy: policy.name, violation: boundViolation(policy, run) }).toEqual({ policy: policy.name, violation: null });
      }),
      RUNS,
    );
  });

  it("describes the most restrictive policy at the top level", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        for (const { decision } of runTrace(policies, steps).records) {
          const top = decision.policies.find((p) => p.policy === decision.policy)!;
          expect({ limit: decision.limit, remaining: decision.remaining, resetMs: decision.resetMs }).toEqual({ limit: top.limit, remaining: top.remaining, resetMs: top.resetMs });
          if (decision.allowed) {
            expect(top.remaining).toBe(Math.min(...decision.policies.map((p) => p.remaining)));
          } else {
            expect(top.allowed).toBe(false);
            const latest = (p: (typeof decision.policies)[number]) => (p.allowed ? -1 : (p.retryAfterMs ?? Number.POSITIVE_INFINITY));
            expect(latest(top)).toBe(Math.max(...decision.policies.map(latest)));
          }
        }
      }),
      RUNS,
    );
  });
});
