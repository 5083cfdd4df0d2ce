import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { RUNS, assertBound, policyArb, policyTraceArb, runTrace } from "./property-helpers.js";

describe("property: gcra", () => {
  it("admits at most burst + d/T in any span of length d, counting reserved requests at now + waitMs", () => {
    assertBound("gcra");
  });

  it("admits a full burst at once on a fresh key and then exactly one request per interval", () => {
    fc.assert(
      fc.property(policyArb("gcra"), (policy) => {
        const intervalMs = policy.periodMs / policy.limit;
        const steps = Array.from({ length: policy.burst }, () => ({ gapMs: 0, cost: 1, mode: "reject" as const, maxWaitMs: 0 }));
        const burst = runTrace([policy], steps).records.map((r) => r.decision.allowed);
        expect(burst.every(Boolean)).toBe(true);
        const waitMs = Math.ceil(intervalMs - 1e-6);
        const paced = runTrace([policy], [...steps, { gapMs: 0, cost: 1, mode: "reserve", maxWaitMs: waitMs }]).records.at(-1)!.decision;
        expect(paced).toMatchObject({ allowed: true, waitMs });
      }),
      RUNS,
    );
  });
});

describe("property: gcra is exact", () => {
  it("admits exactly when tat + cost·T − burst·T ≤ now, in integer arithmetic, at today's clock values too", () => {
    fc.assert(
      fc.property(policyTraceArb("gcra", { reserve: false }), fc.constantFrom(0, 1_700_000_000_000, 1_763_728_252_000), ({ policy, steps }, startMs) => {
        const { limit, periodMs, burst } = policy;
        // Times in units of 1/limit ms from the trace's start: T is exactly `periodMs` units.
        let tatUnits = 0;
        for (const { nowMs, input, decision } of runTrace([policy], steps, startMs).records) {
          if (input.cost === 0 || input.cost > burst) continue;
          const nowUnits = (nowMs - startMs) * limit;
          const allowed = Math.max(tatUnits, nowUnits) + (input.cost - burst) * periodMs <= nowUnits;
          expect(decision.allowed).toBe(allowed);
          if (allowed) tatUnits = Math.max(tatUnits, nowUnits) + input.cost * periodMs;
          const backlogUnits = Math.max(0, tatUnits - nowUnits);
          expect(decision.remaining).toBe(Math.max(0, Math.floor((burst * periodMs - backlogUnits) / periodMs)));
          expect(decision.resetMs).toBe(Math.ceil(backlogUnits / limit));
        }
      }),
      RUNS,
    );
  });
});
