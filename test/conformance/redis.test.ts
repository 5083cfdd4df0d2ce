import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, connectRedis, disconnectRedis } from "../../scripts/redis-server.js";
import { redisAdapter } from "./redis-adapter.js";
import { SCENARIOS, coreAdapter, runScenario } from "./scenarios.js";

describe("conformance table on Redis (standalone)", () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    ({ server, client } = await connectRedis());
  });

  afterAll(() => disconnectRedis(server, client));

  for (const [index, scenario] of SCENARIOS.entries()) {
    it(scenario.name, async () => {
      const expected = await runScenario(scenario, coreAdapter());
      const adapter = redisAdapter(client, `conf${index}:`);
      expect(await runScenario(scenario, adapter)).toEqual(expected);
    });
  }
});
