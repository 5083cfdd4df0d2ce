import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import type { CheckOptions, Decision, Policy } from "../../../src/core/types.js";
import { StoreUnavailableError, applyFailMode } from "../../../src/core/limiter.js";
import { LocalCache } from "../../../src/local/local-cache.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { FlakyStore } from "./local-cache-helpers.js";
import { RUNS } from "../core/property-helpers.js";

const check = (cost: number): CheckOptions => ({ cost, mode: "reject", maxWaitMs: 0 });

const policyArb = fc.record({
  algorithm: fc.constantFrom("fixed-window" as const, "sliding-window" as const, "token-bucket" as const),
  limit: fc.integer({ min: 1, max: 40 }),
  periodMs: fc.integer({ min: 5, max: 200 }),
  share: fc.constantFrom(0, 0.1, 0.25, 0.5),
}).map(({ algorithm, limit, periodMs, share }) => parsePolicy({ name: "hot", algorithm, limit, period: periodMs, local: { share } }, "policy"));

/** Arrivals: which cache, after how long, at what cost. */
const traceArb = fc.array(fc.record({ cache: fc.nat(3), gapMs: fc.oneof(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 60 })), cost: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 120 });

interface Admission {
  atMs: number;
  cost: number;
}

/** Whether an exact limiter, given only the admitted requests at their times, admits every one. */
async function exactAdmitsAll(policy: Policy, admitted: readonly Admission[]): Promise<boolean> {
  let nowMs = 0;
  const exact = new MemoryStore({ clockMs: () => nowMs });
  for (const admission of admitted) {
    nowMs = admission.atMs;
    if (!(await exact.check("hot", [policy], check(admission.cost))).allowed) return false;
  }
  return true;
}

describe("LocalCache: never over-admits", () => {
  it("the requests admitted through several caches are all admitted by an exact limiter replaying them", async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, traceArb, async (policy, trace) => {
        let nowMs = 1000;
        const store = new MemoryStore({ clockMs: () => nowMs });
        const caches = Array.from({ length: 4 }, () => new LocalCache(store, { clockMs: () => nowMs, batchTargetMs: 200 }));
        const admitted: Admission[] = [];
        for (const step of trace) {
          nowMs += step.gapMs;
          const decision = await caches[step.cache]!.check("hot", [policy], check(step.cost));
          if (decision.allowed) admitted.push({ atMs: nowMs, cost: step.cost });
        }
        expect(await exactAdmitsAll(policy, admitted)).toBe(true);
      }),
      RUNS,
    );
  });

  it("a cache with no round trip and one caller admits exactly what the store alone admits, when share is 0", async () => {
    await fc.assert(
      fc.asyncProperty(policyArb, traceArb, async (written, trace) => {
        const policy = { ...written, local: { share: 0 } };
        let nowMs = 1000;
        const cached = new LocalCache(new MemoryStore({ clockMs: () => nowMs }), { clockMs: () => nowMs });
        const alone = new MemoryStore({ clockMs: () => nowMs });
        for (const step of trace) {
          nowMs += step.gapMs;
          const [a, b] = [await cached.check("hot", [policy], check(step.cost)), await alone.check("hot", [policy], check(step.cost))];
          expect(a.allowed).toBe(b.allowed);
        }
      }),
      RUNS,
    );
  });

  it("units debited in one window are never spent in the next", async () => {
    let nowMs = 1000;
    const store = new MemoryStore({ clockMs: () => nowMs });
    const [a, b] = [new LocalCache(store, { clockMs: () => nowMs }), new LocalCache(store, { clockMs: () => nowMs })];
    const policy = parsePolicy({ name: "hot", algorithm: "fixed-window", limit: 20, period: 100, local: { share: 0.5 } }, "policy");
    await a.check("k", [policy], check(1));
    nowMs += 1;
    await a.check("k", [policy], check(1)); // a batch: a holds units of the window [1000, 1100)
    let admittedInNextWindow = 0;
    for (nowMs = 1100; nowMs < 1130; nowMs++) if ((await b.check("k", [policy], check(1))).allowed) admittedInNextWindow++;
    for (let i = 0; i < 5; i++) if ((await a.check("k", [policy], check(1))).allowed) admittedInNextWindow++;
    expect(admittedInNextWindow).toBe(20);
  });
});

describe("LocalCache: the deny cache", () => {
  it("never denies what the store would admit: a local denial ends no later than the store's own", async () => {
    const anyRate = fc.record({ algorithm: fc.constantFrom("gcra" as const, "sliding-log" as const, "fixed-window" as const), limit: fc.integer({ min: 1, max: 20 }), periodMs: fc.integer({ min: 5, max: 200 }) });
    await fc.assert(
      fc.asyncProperty(anyRate, traceArb, async ({ algorithm, limit, periodMs }, trace) => {
        const policy = parsePolicy({ name: "hot", algorithm, limit, period: periodMs, local: { share: 0 } }, "policy");
        let nowMs = 1000;
        const store = new MemoryStore({ clockMs: () => nowMs });
        const caches = Array.from({ length: 4 }, () => new LocalCache(store, { clockMs: () => nowMs }));
        for (const step of trace) {
          nowMs += step.gapMs;
          const decision = await caches[step.cache]!.check("hot", [policy], check(1));
          if (decision.allowed) continue;
          const truth = await store.peek("hot", [policy]);
          expect(truth.allowed).toBe(false);
          expect(decision.retryAfterMs!).toBeLessThanOrEqual(truth.retryAfterMs!);
        }
      }),
      RUNS,
    );
  });

  it("answers a repeated denial without the store, with a shrinking retryAfterMs", async () => {
    let nowMs = 1000;
    const store = new FlakyStore(new MemoryStore({ clockMs: () => nowMs }), () => "ok");
    const cache = new LocalCache(store, { clockMs: () => nowMs });
    const policy = parsePolicy({ name: "hot", limit: 2, period: "1s", local: { share: 0 } }, "policy");
    await cache.check("k", [policy], check(1));
    await cache.check("k", [policy], check(1));
    const first = await cache.check("k", [policy], check(1));
    const calls = store.calls;
    nowMs += 100;
    const again = await cache.check("k", [policy], check(1));
    expect(store.calls).toBe(calls);
    expect(again.allowed).toBe(false);
    expect(again.retryAfterMs).toBe(first.retryAfterMs! - 100);
    nowMs += again.retryAfterMs!;
    expect((await cache.check("k", [policy], check(1))).allowed).toBe(true);
    expect(store.calls).toBe(calls + 1);
  });
});

describe("LocalCache: store failures", () => {
  it("no batch is lost into an admission or counted twice: admitted units never exceed the units the store debited", async () => {
    const outcome = fc.constantFrom("ok" as const, "fail-before" as const, "fail-after" as const);
    await fc.assert(
      fc.asyncProperty(policyArb, traceArb, fc.array(outcome, { minLength: 1, maxLength: 20 }), async (policy, trace, outcomes) => {
        let nowMs = 1000;
        let call = 0;
        const store = new FlakyStore(new MemoryStore({ clockMs: () => nowMs }), () => outcomes[call++ % outcomes.length]!);
        const caches = Array.from({ length: 4 }, () => new LocalCache(store, { clockMs: () => nowMs, batchTargetMs: 200 }));
        const admitted: Admission[] = [];
        let admittedUnits = 0;
        for (const step of trace) {
          nowMs += step.gapMs;
          let decision: Decision;
          try {
            decision = await caches[step.cache]!.check("hot", [policy], check(step.cost));
          } catch (error) {
            expect(error).toBeInstanceOf(StoreUnavailableError);
            continue;
          }
          if (decision.allowed) {
            admitted.push({ atMs: nowMs, cost: step.cost });
            admittedUnits += step.cost;
          }
        }
        expect(admittedUnits).toBeLessThanOrEqual(store.debitedUnits);
        // A token bucket's refill grid starts at its first debit, which a lost answer hides
        // from the replay; the windows of the other two are aligned to the epoch.
        if (policy.algorithm !== "token-bucket") expect(await exactAdmitsAll(policy, admitted)).toBe(true);
      }),
      RUNS,
    );
  });

  it("a failed batch call admits nothing unless every policy fails open", async () => {
    const nowMs = 1000;
    const store = new FlakyStore(new MemoryStore({ clockMs: () => nowMs }), () => "fail-after");
    const cache = new LocalCache(store, { clockMs: () => nowMs });
    for (const failMode of ["closed", "open"] as const) {
      const policy = parsePolicy({ name: `hot-${failMode}`, algorithm: "fixed-window", limit: 100, period: "1s", failMode, local: { share: 0.5 } }, "policy");
      const run = applyFailMode([policy], () => cache.check("k", [policy], check(1)));
      if (failMode === "closed") await expect(run).rejects.toBeInstanceOf(StoreUnavailableError);
      else expect(await run).toMatchObject({ allowed: true, failedOpen: true });
    }
  });
});
