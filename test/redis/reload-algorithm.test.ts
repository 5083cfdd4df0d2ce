import { afterAll, beforeAll } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { reloadAlgorithmSuite } from "../unit/node/serve/reload-algorithm-suite.js";

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(async () => {
  await server?.stop();
});

reloadAlgorithmSuite("Redis", async () => {
  const store = new RedisStore({ url: server.url, keyPrefix: "reload:", timeoutMs: 2000 });
  await store.ready();
  return store;
});
