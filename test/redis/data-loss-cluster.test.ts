import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { hashSlot } from "../../src/stores/redis/nodes.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisClusterServers, startRedisCluster } from "../../scripts/redis-server.js";

const LEASE_MS = 2000;
const two = parsePolicy({ name: "two", algorithm: "concurrency", limit: 2, lease: `${LEASE_MS}ms` }, "policy");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("data loss on a Redis Cluster: a marker per master", { timeout: 60_000 }, () => {
  let servers: RedisClusterServers;
  let store: RedisStore;
  const logged: string[] = [];

  beforeAll(async () => {
    servers = await startRedisCluster(3);
    store = new RedisStore({ clusterNodes: servers.startupNodes, timeoutMs: 500, dataCheckIntervalMs: 100, log: (line) => logged.push(line) });
    expect(await store.ready(10_000)).toBe(true);
  });
  afterAll(async () => {
    await store?.close();
    await servers?.stop();
  });

  it("each master holds its own marker, in a slot it serves; FLUSHALL on one master is noticed, logged once naming it, and fences", async () => {
    const admins = servers.nodes.map((node) => new Redis(node.url));
    try {
      // The first verification writes the markers.
      for (let i = 0; i < 100 && (await Promise.all(admins.map((admin) => admin.keys("spillway:{~epoch-*}")))).some((keys) => keys.length !== 1); i++) await sleep(50);
      for (const admin of admins) {
        const [marker] = await admin.keys("spillway:{~epoch-*}");
        expect(marker).toBeDefined();
        const slot = hashSlot(marker!);
        expect(Number(await admin.call("CLUSTER", "COUNTKEYSINSLOT", String(slot)))).toBeGreaterThanOrEqual(1);
      }
      // Leases on many keys, so every master holds some.
      const keys = Array.from({ length: 12 }, (_, i) => `user-${i}`);
      for (const key of keys) for (let i = 0; i < 2; i++) expect((await store.acquire(key, [two], { maxWaitMs: 0 })).acquired).toBe(true);
      await sleep(300);
      expect(store.storeResets()).toBe(0);

      await admins[1]!.flushall();
      const flushedMs = performance.now();
      while (store.storeResets() === 0 && performance.now() - flushedMs < 5000) await sleep(20);
      expect(store.storeResets()).toBe(1);
      const lines = logged.filter((line) => line.includes('"store-reset"'));
      expect(lines).toHaveLength(1);
      expect(JSON.parse(lines[0]!)).toMatchObject({ store: "redis-cluster", node: `127.0.0.1:${servers.nodes[1]!.port}` });
      // No key is granted a third lease while the old holders may still hold theirs.
      for (const key of keys) expect((await store.acquire(key, [two], { maxWaitMs: 0 })).acquired).toBe(false);
      await sleep(LEASE_MS + 200);
      expect(store.storeResets()).toBe(1);
    } finally {
      for (const admin of admins) admin.disconnect();
    }
  });
});
