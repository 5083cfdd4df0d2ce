import { describe, expect, it } from "vitest";
import { MemoryStore } from "../../src/stores/memory.js";
import { SCENARIOS, clockedAdapter, coreAdapter, runScenario, unmetExpectations } from "./scenarios.js";

describe("conformance table on the pure core", () => {
  it("has scenarios for every algorithm and operation", () => {
    const algorithms = new Set(SCENARIOS.flatMap((scenario) => Object.values(scenario.policies).map((policy) => policy.algorithm)));
    expect([...algorithms].sort()).toEqual(["concurrency", "credits", "fixed-window", "gcra", "sliding-log", "sliding-window", "token-bucket"]);
    const ops = new Set(SCENARIOS.flatMap((scenario) => scenario.steps.map((step) => step.op)));
    expect([...ops].sort()).toEqual(["acquire", "check", "credits", "debit", "extend", "peek", "release", "reset"]);
  });

  for (const scenario of SCENARIOS) {
    it(scenario.name, async () => {
      const outcomes = await runScenario(scenario, coreAdapter());
      expect(unmetExpectations(scenario, outcomes)).toEqual([]);
      // The memory store (LocalKey + LeaseQueue) must agree with the bare core.
      const memory = clockedAdapter((clockMs) => new MemoryStore({ clockMs, sweepIntervalMs: 60_000 }));
      try {
        expect(await runScenario(scenario, memory)).toEqual(outcomes);
      } finally {
        await memory.store.close();
      }
    });
  }
});
