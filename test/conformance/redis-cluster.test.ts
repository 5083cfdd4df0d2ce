import type { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisClusterServers, connectRedisCluster, disconnectRedis } from "../../scripts/redis-server.js";
import { redisAdapter } from "./redis-adapter.js";
import { SCENARIOS, coreAdapter, runScenario } from "./scenarios.js";

describe("conformance table on a Redis Cluster of 3 masters", () => {
  let servers: RedisClusterServers;
  let cluster: Cluster;

  beforeAll(async () => {
    ({ servers, cluster } = await connectRedisCluster(3));
  });

  afterAll(() => disconnectRedis(servers, cluster));

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
