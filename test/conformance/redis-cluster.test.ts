import { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDIS_CLIENT_OPTIONS } from "../../src/stores/redis.js";
import { type RedisClusterServers, startRedisCluster } from "../redis/redis-server.js";
import { redisAdapter } from "./redis-adapter.js";
import { SCENARIOS, coreAdapter, runScenario } from "./scenarios.js";

describe("conformance table on a Redis Cluster of 3 masters", () => {
  let servers: RedisClusterServers;
  let cluster: Cluster;

  beforeAll(async () => {
    servers = await startRedisCluster(3);
    cluster = new Cluster(servers.startupNodes, { enableOfflineQueue: false, redisOptions: REDIS_CLIENT_OPTIONS });
    await new Promise((resolve) => cluster.once("ready", resolve));
  });

  afterAll(async () => {
    cluster?.disconnect();
    await servers?.stop();
  });

  for (const [index, scenario] of SCENARIOS.entries()) {
    it(scenario.name, async () => {
      const expected = await runScenario(scenario, coreAdapter());
      // User keys differ per scenario, so the scenarios spread over the three masters.
      const adapter = redisAdapter(cluster, "conformance:");
      expect(adapter.store.kind).toBe("redis-cluster");
      expect(await runScenario(scenario, adapter, `scenario-${index}/`)).toEqual(expected);
    });
  }

  it("spread the scenarios over every master", async () => {
    const counts = await Promise.all(cluster.nodes("master").map((node) => node.dbsize()));
    expect(counts.filter((count) => count > 0).length).toBe(3);
  });
});
