import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type ConformanceAdapter, SCENARIOS, coreAdapter, runScenario } from "./scenarios.js";

/**
 * Drives LimiterObjects with the scenario clock. The runner prefixes keys per run, and
 * each key is its own object, exactly as in production.
 */
function durableObjectAdapter(): ConformanceAdapter {
  const stub = (key: string) => env.LIMITER.getByName(key);
  return {
    check: (key, policies, options, nowMs) => stub(key).check([...policies], options, nowMs),
    peek: (key, policies, nowMs) => stub(key).peek([...policies], nowMs),
    reset: (key, policies) => stub(key).reset([...policies]),
    acquire: async (key, policies, options, nowMs) => (await stub(key).acquire([...policies], options, nowMs)) as Awaited<ReturnType<ConformanceAdapter["acquire"]>>,
    release: (key, policies, leaseId, nowMs) => stub(key).release([...policies], leaseId, nowMs),
    extend: (key, policies, leaseId, leaseMs, nowMs) => stub(key).extend([...policies], leaseId, leaseMs, nowMs),
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
