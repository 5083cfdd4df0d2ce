import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import type { RunningServer } from "../../src/node/serve/server.js";
import { hashSlot } from "../../src/stores/redis/nodes.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type ReplicatedCluster, startClusterWithReplica } from "../../scripts/redis-cluster-replicas.js";
import { untilReplicated } from "../../scripts/redis-sentinel.js";
import { LEASE_MS, admitUntilDenied, call, firstDecidedAcquire, serveStore, sleep, steadyLoad, summarize, untilDecidesAgain } from "./failover-harness.js";

// A Redis Cluster of three masters (cluster-node-timeout 1000), the first with a replica;
// under a steady load of decisions the first master is killed with SIGKILL and its replica
// takes over its slots. The Cluster twin of failover-sentinel.test.ts.

/** A key (of a name starting with `prefix`) whose slot the first master serves. */
function keyOnFirstMaster(cluster: ReplicatedCluster, prefix: string): string {
  for (let n = 0; ; n++) {
    const slot = hashSlot(`${prefix}-${n}`);
    if (slot >= cluster.slots[0] && slot <= cluster.slots[1]) return `${prefix}-${n}`;
  }
}

describe("Redis Cluster failover under load", { timeout: 60_000 }, () => {
  let cluster: ReplicatedCluster;
  let store: RedisStore;
  let server: RunningServer;
  const logged: string[] = [];

  beforeAll(async () => {
    cluster = await startClusterWithReplica(1000);
    store = new RedisStore({ clusterNodes: cluster.startupNodes, timeoutMs: 250, log: (line) => logged.push(line) });
    expect(await store.ready(5000)).toBe(true);
    server = await serveStore(store);
    vi.spyOn(console, "log").mockImplementation(() => {});
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await server?.close();
    await cluster?.stop();
  });

  it("SIGKILL of a master: its replica serves its slots within 6 s, no hang and no 500, replicated counts kept, leases fenced", async () => {
    const counted = keyOnFirstMaster(cluster, "counted");
    const held = keyOnFirstMaster(cluster, "held");
    const fresh = keyOnFirstMaster(cluster, "fresh");
    for (let i = 0; i < 30; i++) expect((await call(server, "check", { key: counted, policy: "counted" })).status).toBe(200);
    expect((await Promise.all([0, 1].map(() => call(server, "acquire", { key: held, policy: "leases" })))).map((answer) => answer.status)).toEqual([200, 200]);
    // (The acquires waited for the guard's first check of every master: a master seen later is new.)
    // Every write so far is on the replica: the count that failover keeps.
    await untilReplicated(cluster.nodes[0]!.port, cluster.replica.port);

    const load = steadyLoad(server);
    await sleep(300);
    const killedMs = performance.now();
    await cluster.nodes[0]!.kill();
    const resumedMs = await untilDecidesAgain(store, killedMs, counted);
    // At once, while the fence (one lease, from the moment the new master is seen) surely holds:
    // the steps below take longer than a lease on a loaded machine.
    const { answer: fenced, unavailable } = await firstDecidedAcquire(server, fresh);
    expect(fenced.status, `after ${unavailable} answers 503 while the guard verified`).toBe(429);
    expect(fenced.body.retryAfterMs).toBeGreaterThan(0);
    expect(fenced.body.retryAfterMs).toBeLessThanOrEqual(LEASE_MS);

    await sleep(500);
    const samples = await load.stop();

    expect(resumedMs).toBeLessThan(6000);
    const seen = summarize(samples);
    expect(seen.hangs, JSON.stringify(seen)).toBe(0);
    expect(seen.statuses.every((status) => status === 200 || status === 503), JSON.stringify(seen)).toBe(true);
    expect(seen.openRefused, JSON.stringify(seen)).toBe(0);
    // Only the load's keys on the dead master's slots meet the gap (each call waits up to the
    // store's longer cap there, since the other masters answer): failMode answered those.
    expect(seen.failedOpen + seen.closedUnavailable, JSON.stringify(seen)).toBeGreaterThan(0);

    expect(await admitUntilDenied(server, counted)).toBe(20);

    const resets = logged.filter((line) => line.includes('"store-reset"'));
    expect(resets).toHaveLength(1);
    expect(JSON.parse(resets[0]!)).toMatchObject({ store: "redis-cluster", node: `127.0.0.1:${cluster.replica.port}` });
    expect(resets[0]).toMatch(/a Cluster master not seen before serves keys/);
    await sleep((fenced.body.retryAfterMs as number) + 100);
    expect((await call(server, "acquire", { key: fresh, policy: "leases" })).status).toBe(200);
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
  });
});
