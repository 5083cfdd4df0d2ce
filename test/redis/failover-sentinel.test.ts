import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunningServer } from "../../src/node/serve/server.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type SentinelGroup, startSentinelGroup, untilReplicated } from "../../scripts/redis-sentinel.js";
import { LEASE_MS, admitUntilDenied, call, firstDecidedAcquire, serveStore, sleep, steadyLoad, summarize, untilDecidesAgain } from "./failover-harness.js";

// A master, a replica and three sentinels (down-after-milliseconds 1000) on loopback; under a
// steady load of decisions the master is killed with SIGKILL. docs/redis.md ("Failover")
// reports what this measures; docs/health.md says what the lease fence does.

describe("Sentinel failover under load", { timeout: 60_000 }, () => {
  let group: SentinelGroup;
  let store: RedisStore;
  let server: RunningServer;
  const logged: string[] = [];

  beforeAll(async () => {
    group = await startSentinelGroup({ replicas: 1, downAfterMs: 1000 });
    // 250 ms: a loaded 2-core CI machine must not look like a failover.
    store = new RedisStore({ sentinels: group.addresses, name: group.name, timeoutMs: 250, log: (line) => logged.push(line) });
    expect(await store.ready(5000)).toBe(true);
    server = await serveStore(store);
    // The HTTP error path logs each store error to stdout: keep the output quiet.
    vi.spyOn(console, "log").mockImplementation(() => {});
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await server?.close();
    await group?.stop();
  });

  it("SIGKILL of the master: decisions resume on the promoted replica within 6 s, no hang and no 500, replicated counts kept, leases fenced", async () => {
    for (let i = 0; i < 30; i++) expect((await call(server, "check", { key: "counted", policy: "counted" })).status).toBe(200);
    const held = await Promise.all([0, 1].map(() => call(server, "acquire", { key: "held", policy: "leases" })));
    expect(held.map((answer) => answer.status)).toEqual([200, 200]);
    // Every write so far is on the replica: the count that failover keeps.
    await untilReplicated(group.master.port, group.replicas[0]!.port);

    const load = steadyLoad(server);
    await sleep(300);
    const killedMs = performance.now();
    await group.master.kill();
    const resumedMs = await untilDecidesAgain(store, killedMs);
    // At once, while the fence (one lease, from the moment the new master is seen) surely holds:
    // the steps below take longer than a lease on a loaded machine.
    const { answer: fenced, unavailable } = await firstDecidedAcquire(server, "fresh");
    expect(fenced.status, `after ${unavailable} answers 503 while the guard verified`).toBe(429);
    expect(fenced.body.retryAfterMs).toBeGreaterThan(0);
    expect(fenced.body.retryAfterMs).toBeLessThanOrEqual(LEASE_MS);

    await sleep(500);
    const samples = await load.stop();

    expect(resumedMs).toBeLessThan(6000);
    expect(await group.masterPort()).toBe(group.replicas[0]!.port);
    const seen = summarize(samples);
    expect(seen.hangs, JSON.stringify(seen)).toBe(0);
    expect(seen.statuses.every((status) => status === 200 || status === 503), JSON.stringify(seen)).toBe(true);
    // The gap was answered by each policy's failMode: open admitted, closed refused with 503.
    expect(seen.openRefused, JSON.stringify(seen)).toBe(0);
    expect(seen.failedOpen, JSON.stringify(seen)).toBeGreaterThan(0);
    expect(seen.closedUnavailable, JSON.stringify(seen)).toBeGreaterThan(0);
    // After the gap: decided by the store again, not by failMode.
    const last = samples.filter((sample) => sample.startedMs > killedMs + resumedMs + 100);
    expect(last.length).toBeGreaterThan(0);
    expect(last.every((sample) => sample.status === 200 && !sample.failedOpen), JSON.stringify(last.slice(0, 3))).toBe(true);

    // 30 admitted before on a limit of 50, replicated: 20 more, not 50.
    expect(await admitUntilDenied(server, "counted")).toBe(20);

    // The data-loss guard saw another server answer, once, and fences leases for one lease length.
    const resets = logged.filter((line) => line.includes('"store-reset"'));
    expect(resets).toHaveLength(1);
    expect(JSON.parse(resets[0]!)).toMatchObject({ store: "redis-sentinel", node: "server" });
    expect(resets[0]).toMatch(/another server process answers \(run_id \w+ -> \w+\)/);
    expect(store.storeResets()).toBe(1);
    await sleep((fenced.body.retryAfterMs as number) + 100);
    expect((await call(server, "acquire", { key: "fresh", policy: "leases" })).status).toBe(200);
    expect((await call(server, "acquire", { key: "held", policy: "leases" })).status).toBe(200);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
