import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeObservability } from "../../../../src/node/metrics/observability.js";
import { MemoryStore } from "../../../../src/stores/memory.js";

const config = parseConfig({ policies: [{ name: "uploads", algorithm: "concurrency", limit: 2, lease: "1m" }, { name: "idle", algorithm: "concurrency", limit: 5 }] });

/** One gauge's value per policy, from a scrape parsed by an independent parser. */
async function gauge(scrape: () => Promise<{ body: string }>, name: string): Promise<Record<string, string>> {
  const family = parsePrometheusTextFormat((await scrape()).body).find((one) => one.name === name);
  return Object.fromEntries((family?.metrics ?? []).map((metric) => [metric.labels!.policy!, (metric as { value: string }).value]));
}

describe("lease gauges (memory store)", () => {
  it("spillway_leases_held and spillway_lease_waiters count every key's leases and waiters, per policy", async () => {
    const store = new MemoryStore();
    const observing = createNodeObservability({ config, limiter: store, log: () => {} });
    const uploads = config.policies.filter((policy) => policy.name === "uploads");
    const scrape = observing.routes.metrics!;
    expect(await gauge(scrape, "spillway_leases_held")).toEqual({ uploads: "0", idle: "0" });

    const first = await store.acquire("alice", uploads, { maxWaitMs: 0 });
    await store.acquire("alice", uploads, { maxWaitMs: 0 });
    await store.acquire("bob", uploads, { maxWaitMs: 0 });
    const waiting = store.acquire("alice", uploads, { maxWaitMs: 5_000 });
    expect(await gauge(scrape, "spillway_leases_held")).toEqual({ uploads: "3", idle: "0" });
    expect(await gauge(scrape, "spillway_lease_waiters")).toEqual({ uploads: "1", idle: "0" });

    // The waiter takes the released slot: still 3 held, nobody waiting.
    await store.release("alice", uploads, (first as { leaseId: string }).leaseId);
    expect((await waiting).acquired).toBe(true);
    expect(await gauge(scrape, "spillway_leases_held")).toEqual({ uploads: "3", idle: "0" });
    expect(await gauge(scrape, "spillway_lease_waiters")).toEqual({ uploads: "0", idle: "0" });
    await store.close();
  });
});
