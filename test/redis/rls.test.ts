import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, connectRedisCluster, startRedis } from "../../scripts/redis-server.js";
import { parseRlsConfig } from "../../src/rls/config.js";
import { parseRlsText } from "../../src/rls/files.js";
import { type RunningRlsServer, startRlsServer } from "../../src/node/grpc/server.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RlsClient, d, rlsClient, unique } from "../unit/node/grpc/rls-helpers.js";
import { describeRlsSuite } from "../unit/node/grpc/rls-suite.js";

describeRlsSuite("Redis", async () => {
  const server = await startRedis();
  const limiter = new RedisStore({ url: server.url, timeoutMs: 1000 });
  await limiter.ready();
  return { limiter, close: async () => (await limiter.close(), await server.stop()) };
});

describeRlsSuite("Redis Cluster", async () => {
  const { servers, cluster } = await connectRedisCluster(3);
  const limiter = new RedisStore({ client: cluster, timeoutMs: 1000 });
  return { limiter, close: async () => (cluster.disconnect(), await servers.stop()) };
});

const FAILURE_CONFIG = `domain: failures
descriptors:
  - key: closed
    rate_limit: { unit: minute, requests_per_unit: 5 }
  - key: open
    rate_limit: { unit: minute, requests_per_unit: 5, failMode: open }
  - key: free
    rate_limit: { unlimited: true }
`;

describe("Envoy RLS with a dead Redis", () => {
  let redis: RedisServer;
  let store: RedisStore;
  let server: RunningRlsServer;
  let client: RlsClient;

  beforeAll(async () => {
    redis = await startRedis();
    store = new RedisStore({ url: redis.url, timeoutMs: 100, log: () => {} });
    await store.ready();
    server = await startRlsServer({ limiter: store, config: parseRlsConfig([parseRlsText("failures.yaml", FAILURE_CONFIG)]), port: 0, log: () => {} });
    client = rlsClient(server.address);
    expect((await client.ask("failures", [d(["closed", "x"])])).overall_code).toBe("OK");
    await redis.kill();
  });

  afterAll(async () => {
    client?.close();
    await server?.close();
    await store?.close();
    await redis?.stop();
  });

  it("answers UNAVAILABLE (Envoy then applies failure_mode_deny), not a hang", async () => {
    await expect(client.ask("failures", [d(["closed", unique("k")])], { deadlineMs: 5000 })).rejects.toMatchObject({ code: 14, details: expect.stringContaining("store unavailable") });
  });

  it("admits what failMode: open allows, and answers unlimited descriptors without the store", async () => {
    expect((await client.ask("failures", [d(["open", unique("k")])])).overall_code).toBe("OK");
    expect((await client.ask("failures", [d(["free", unique("k")])])).statuses[0]!.code).toBe("OK");
    // One closed limit in the request is enough to refuse to guess.
    await expect(client.ask("failures", [d(["open", "k"]), d(["closed", "k"])])).rejects.toMatchObject({ code: 14 });
  });

  it("health says NOT_SERVING while the store is down", async () => {
    expect(await client.health()).toEqual({ status: "NOT_SERVING" });
  });
});
