import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeObservability } from "../../../../src/node/metrics/observability.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

const config = parseConfig({
  policies: [
    { name: "per-hour", algorithm: "fixed-window", limit: 1, period: "1h" },
    { name: "slots", algorithm: "concurrency", limit: 2, lease: "1m" },
  ],
});
const MAX_STATES = 50;
const INLINE_NAMES = 3000;

let server: RunningServer;
let store: MemoryStore;

beforeAll(async () => {
  store = new MemoryStore({ maxKeys: MAX_STATES });
  const observing = createNodeObservability({ config, limiter: store, log: () => {} });
  server = await startServer({ config, limiter: observing.apiLimiter, port: 0, token: "t", observability: observing.routes });
});
afterAll(async () => {
  await server?.close();
  await store?.close();
});

const post = (path: string, body: unknown) =>
  fetch(`${server.url}${path}`, { method: "POST", headers: { authorization: "Bearer t", "content-type": "application/json" }, body: JSON.stringify(body) });
const get = async (path: string) => (await fetch(`${server.url}${path}`, { headers: { authorization: "Bearer t" } })).text();

/** Every spillway_* sample of a scrape, by its labels (process_* and nodejs_* vary with the GC). */
async function spillwaySeries(): Promise<string[]> {
  const families = parsePrometheusTextFormat(await get("/metrics")).filter((family) => family.name.startsWith("spillway_"));
  return families.flatMap((family) => family.metrics.map((metric) => `${family.name}${JSON.stringify((metric as { labels?: unknown }).labels ?? {})}`)).sort();
}

/** A check of an inline policy named `name`, allowed then denied (limit 1). */
async function inlineTwice(name: string, key: string): Promise<number[]> {
  const policy = { name, algorithm: "fixed-window", limit: 1, period: "1h" };
  const statuses = [];
  for (let i = 0; i < 2; i++) statuses.push((await post("/v1/check", { key, policy })).status);
  return statuses;
}

describe("inline policy names are neither labels nor unbounded state", { timeout: 120_000 }, () => {
  it(`${INLINE_NAMES} distinct inline names through /v1/check add no series, keep /v1/stats' size, and stay within the store's bound`, async () => {
    expect((await post("/v1/check", { key: "someone", policy: "per-hour" })).status).toBe(200);
    expect((await post("/v1/acquire", { key: "someone", policy: { name: "inline-slots", algorithm: "concurrency", limit: 1 } })).status).toBe(200);
    expect(await inlineTwice("warm-up", "k")).toEqual([200, 429]);
    const seriesBefore = await spillwaySeries();

    // A few keys, each with ever new names: state grows by (key, policy), not by key.
    const attack = async (from: number, to: number) => {
      for (let i = from; i < to; i += 10) {
        // One key per batch: a key that evicts another (the store is full) never does so mid-pair.
        const batch = Array.from({ length: Math.min(10, to - i) }, (_, j) => inlineTwice(`attacker-${i + j}`, `k${(i / 10) % 3}`));
        for (const statuses of await Promise.all(batch)) expect(statuses).toEqual([200, 429]);
      }
    };
    await attack(0, 1000);
    // By now the top list holds the attacker's keys: what follows may change digits only.
    const statsDuring = await get("/v1/stats");
    await attack(1000, INLINE_NAMES);

    const metrics = await get("/metrics");
    expect(await spillwaySeries()).toEqual(seriesBefore);
    expect(metrics).not.toContain("attacker-");
    expect(metrics).toContain(`spillway_decisions_total{policy="inline",outcome="denied"} ${INLINE_NAMES + 1}`);
    expect(metrics).toContain('spillway_decisions_total{policy="per-hour",outcome="allowed"} 1');
    // The inline concurrency policy's lease is counted under `inline` too.
    expect(metrics).toContain('spillway_leases_held{policy="inline"} 1');
    expect(metrics).toContain('spillway_leases_held{policy="slots"} 0');

    const statsAfter = await get("/v1/stats");
    const stats = JSON.parse(statsAfter) as { policies: Record<string, unknown>; top: { policy: string }[] };
    expect(Object.keys(stats.policies).sort()).toEqual(["inline", "per-hour", "slots"]);
    expect(stats.top.length).toBeLessThanOrEqual(20);
    expect(stats.top.every((entry) => !entry.policy.startsWith("attacker-"))).toBe(true);
    // Only digits of counts and times change: a fixed size but for a few characters.
    expect(Math.abs(statsAfter.length - statsDuring.length)).toBeLessThan(64);

    expect(store.states).toBeLessThanOrEqual(MAX_STATES);
    expect(store.evictions).toBeGreaterThanOrEqual(INLINE_NAMES - MAX_STATES);
  });
});
