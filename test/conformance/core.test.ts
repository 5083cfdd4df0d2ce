import { describe, expect, it } from "vitest";
import type { Policy } from "../../src/core/types.js";
import { MemoryStore } from "../../src/stores/memory.js";
import { BASE_MS, type ConformanceAdapter, SCENARIOS, coreAdapter, runScenario, unmetExpectations } from "./scenarios.js";

/** The memory store with an injected clock, driven like every other store. */
function memoryAdapter(): ConformanceAdapter & { close(): Promise<void> } {
  let nowMs = BASE_MS;
  const store = new MemoryStore({ clockMs: () => nowMs, sweepIntervalMs: 60_000 });
  const at = <T>(timeMs: number, call: () => Promise<T>) => {
    nowMs = timeMs;
    return call();
  };
  return {
    check: (key, policies, options, timeMs) => at(timeMs, () => store.check(key, policies, options)),
    peek: (key, policies, timeMs) => at(timeMs, () => store.peek(key, policies)),
    reset: (key, policies, timeMs) => at(timeMs, () => store.reset(key, policies)),
    acquire: (key, policies, options, timeMs) => at(timeMs, () => store.acquire(key, policies, options)),
    release: (key, policies, leaseId, timeMs) => at(timeMs, () => store.release(key, policies, leaseId)),
    extend: (key, policies: readonly Policy[], leaseId, leaseMs, timeMs) => at(timeMs, () => store.extend(key, policies, leaseId, leaseMs)),
    close: () => store.close(),
  };
}

describe("conformance table on the pure core", () => {
  it("has scenarios for every algorithm and operation", () => {
    const algorithms = new Set(SCENARIOS.flatMap((scenario) => Object.values(scenario.policies).map((policy) => policy.algorithm)));
    expect([...algorithms].sort()).toEqual(["concurrency", "fixed-window", "gcra", "sliding-log", "sliding-window", "token-bucket"]);
    const ops = new Set(SCENARIOS.flatMap((scenario) => scenario.steps.map((step) => step.op)));
    expect([...ops].sort()).toEqual(["acquire", "check", "extend", "peek", "release", "reset"]);
  });

  for (const scenario of SCENARIOS) {
    it(scenario.name, async () => {
      const outcomes = await runScenario(scenario, coreAdapter());
      expect(unmetExpectations(scenario, outcomes)).toEqual([]);
      // The memory store (LocalKey + LeaseQueue) must agree with the bare core.
      const memory = memoryAdapter();
      try {
        expect(await runScenario(scenario, memory)).toEqual(outcomes);
      } finally {
        await memory.close();
      }
    });
  }
});
