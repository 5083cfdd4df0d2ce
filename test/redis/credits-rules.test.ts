import { afterAll, beforeAll } from "vitest";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { creditsRulesSuite } from "../unit/credits-rules-suite.js";

let server: RedisServer;
let store: RedisStore | undefined;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await store?.close();
  await server?.stop();
});

creditsRulesSuite("Redis store", async () => {
  store = new RedisStore({ url: server.url });
  await store.ready();
  return store;
});
