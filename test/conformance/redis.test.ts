import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDIS_CLIENT_OPTIONS } from "../../src/stores/redis.js";
import { type RedisServer, startRedis } from "../redis/redis-server.js";
import { redisAdapter } from "./redis-adapter.js";
import { SCENARIOS, coreAdapter, runScenario } from "./scenarios.js";

describe("conformance table on Redis (standalone)", () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url, REDIS_CLIENT_OPTIONS);
    await new Promise((resolve) => client.once("ready", resolve));
  });

  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  for (const [index, scenario] of SCENARIOS.entries()) {
    it(scenario.name, async () => {
      const expected = await runScenario(scenario, coreAdapter());
      const adapter = redisAdapter(client, `conf${index}:`);
      expect(await runScenario(scenario, adapter)).toEqual(expected);
    });
  }
});
