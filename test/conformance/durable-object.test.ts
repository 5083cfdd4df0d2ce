import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { creditsAnswer } from "../../src/core/credits.js";
import { type ConformanceAdapter, SCENARIOS, coreAdapter, runScenario } from "./scenarios.js";

/**
 * Drives real LimiterObjects (ClockedLimiterObject: the production class on the scenario
 * clock). The runner prefixes keys per run, and each key is its own object, as in production.
 */
function durableObjectAdapter(): ConformanceAdapter {
  const at = async (key: string, nowMs: number) => {
    const stub = env.CLOCKED_LIMITER.getByName(key);
    await stub.setClockMs(nowMs);
    return stub;
  };
  return {
    check: async (key, policies, options, nowMs) => (await at(key, nowMs)).check([...policies], options),
    peek: async (key, policies, nowMs) => (await at(key, nowMs)).peek([...policies]),
    debit: async (key, policies, cost, nowMs, spentAtMs) => (await at(key, nowMs)).debit([...policies], cost, spentAtMs),
    reset: async (key, policies, nowMs) => (await at(key, nowMs)).reset([...policies]),
    acquire: async (key, policies, options, nowMs) => (await (await at(key, nowMs)).acquire([...policies], options)) as Awaited<ReturnType<ConformanceAdapter["acquire"]>>,
    release: async (key, policies, leaseId, nowMs) => (await at(key, nowMs)).release([...policies], leaseId),
    extend: async (key, policies, leaseId, leaseMs, nowMs) => (await at(key, nowMs)).extend([...policies], leaseId, leaseMs),
    // The object answers a refusal past the balance's cap; its store (DurableObjectStore) throws it.
    credits: async (key, policy, change, nowMs) => creditsAnswer(await (await at(key, nowMs)).credits(policy, change)),
  };
}

describe("conformance: the Durable Object decides like the core", () => {
  for (const scenario of SCENARIOS) {
    it(scenario.name, async () => {
      const expected = await runScenario(scenario, coreAdapter());
      const prefix = `conformance-${crypto.randomUUID()}:`;
      expect(await runScenario(scenario, durableObjectAdapter(), prefix)).toEqual(expected);
    });
  }
});
