import { Cluster, Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/stores/redis/store.js";
import { type RedisClusterServers, type RedisServer, connectRedis, connectRedisCluster, disconnectRedis } from "../../scripts/redis-server.js";

const fivePerSecond = parsePolicy({ name: "five", algorithm: "gcra", limit: 5, period: "1s" }, "policy");
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const STORES = 20;

/** Listeners per event on the client and, for a Cluster, on each of its nodes. */
function listenerCounts(client: Redis | Cluster): Record<string, number> {
  const emitters = client instanceof Cluster ? [client, ...client.nodes("all")] : [client];
  const counts: Record<string, number> = {};
  for (const [index, emitter] of emitters.entries()) {
    for (const event of emitter.eventNames()) counts[`${index}:${String(event)}`] = emitter.listenerCount(event);
  }
  return counts;
}

/** Node's MaxListenersExceededWarning, caught while `during` runs. */
async function warningsDuring(during: () => Promise<void>): Promise<string[]> {
  const warnings: string[] = [];
  const onWarning = (warning: Error) => warnings.push(`${warning.name}: ${warning.message}`);
  process.on("warning", onWarning);
  try {
    await during();
    await new Promise((resolve) => setImmediate(resolve)); // warnings are emitted on the next tick
  } finally {
    process.off("warning", onWarning);
  }
  return warnings;
}

async function manyStoresOn(client: Redis | Cluster, prefix: string): Promise<void> {
  // The client's one script runner (and a Cluster's per-node write coalescers) stay with the client.
  await new RedisStore({ client, keyPrefix: `${prefix}-warm:` }).close();
  const before = listenerCounts(client);
  let stores: RedisStore[] = [];
  const warnings = await warningsDuring(async () => {
    stores = Array.from({ length: STORES }, (_, i) => new RedisStore({ client, keyPrefix: `${prefix}${i}:`, timeoutMs: 2000 }));
    const decisions = await Promise.all(stores.map((store) => store.check("k", [fivePerSecond], reject)));
    expect(decisions.every((decision) => decision.allowed)).toBe(true);
  });
  expect(warnings).toEqual([]);
  // Each store still answers for itself: its own keys, its own limit.
  const next = await Promise.all(Array.from({ length: 5 }, () => stores[0]!.check("k", [fivePerSecond], reject)));
  expect(next.map((decision) => decision.allowed)).toEqual([true, true, true, true, false]);
  await Promise.all(stores.map((store) => store.close()));
  // Closed stores leave the shared client as they found it.
  expect(listenerCounts(client)).toEqual(before);
  expect(client.status).toBe("ready");
}

describe("many stores on one client", () => {
  let server: RedisServer;
  let client: Redis;
  let servers: RedisClusterServers;
  let cluster: Cluster;

  beforeAll(async () => {
    ({ server, client } = await connectRedis());
    ({ servers, cluster } = await connectRedisCluster(3));
  });

  afterAll(async () => {
    await disconnectRedis(server, client);
    await disconnectRedis(servers, cluster);
  });

  it(`${STORES} stores on one standalone client: no MaxListeners warning, and closing them removes their listeners`, async () => {
    await manyStoresOn(client, "shared-standalone");
  });

  it(`${STORES} stores on one Cluster client: the same`, async () => {
    await manyStoresOn(cluster, "shared-cluster");
  });

  it("a store closed on a shared client leaves the client's data-loss checks running for the others", async () => {
    const own = new Redis(server.url, REDIS_CLIENT_OPTIONS);
    await new Promise((resolve) => own.once("ready", resolve));
    const logged: string[] = [];
    const options = { client: own, timeoutMs: 2000, dataCheckIntervalMs: 50, log: (line: string) => logged.push(line) };
    const leaving = new RedisStore({ ...options, keyPrefix: "leaving:" });
    const staying = new RedisStore({ ...options, keyPrefix: "staying:" });
    await staying.check("k", [fivePerSecond], reject); // the marker is written
    await leaving.close();
    await own.flushall();
    const deadline = Date.now() + 3000;
    while (staying.storeResets() === 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(staying.storeResets()).toBe(1);
    expect(logged.filter((line) => line.includes("store-reset"))).toHaveLength(1);
    await staying.close();
    own.disconnect();
  });
});
