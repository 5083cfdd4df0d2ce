import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeObservability } from "../../../../src/node/metrics/observability.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

const config = parseConfig({ policies: [{ name: "one-per-hour", algorithm: "fixed-window", limit: 1, period: "1h" }] });

/** The spillway_* samples of a scrape (process_* and nodejs_* vary with the GC's moods). */
async function spillwaySeries(scrape: () => Promise<{ body: string }>): Promise<number> {
  const families = parsePrometheusTextFormat((await scrape()).body).filter((family) => family.name.startsWith("spillway_"));
  return families.reduce((sum, family) => sum + family.metrics.length, 0);
}

describe("metrics and the sketch stay bounded", () => {
  it("100,000 distinct keys (each allowed, then denied) add no series, and the sketch keeps its size", async () => {
    const observing = createNodeObservability({ config, limiter: new MemoryStore({ maxKeys: 200_000 }), log: () => {} });
    const policies = config.policies;
    const options = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
    await observing.apiLimiter.check("warm-up", policies, options);
    await observing.apiLimiter.check("warm-up", policies, options);
    const before = await spillwaySeries(observing.routes.metrics!);

    for (let i = 0; i < 100_000; i++) {
      await observing.apiLimiter.check(`user-${i}`, policies, options);
      await observing.apiLimiter.check(`user-${i}`, policies, options);
    }
    const text = (await observing.routes.metrics!()).body;
    expect(await spillwaySeries(observing.routes.metrics!)).toBe(before);
    expect(text).not.toContain("user-");
    expect(text).toContain('spillway_decisions_total{policy="one-per-hour",outcome="denied"} 100001');
    expect(observing.routes.stats.deniedKeys.size).toBe(observing.routes.stats.deniedKeys.capacity);
    // 200,000 decisions: about a second alone, many more on a loaded machine (the default is 5 s).
  }, 60_000);
});
