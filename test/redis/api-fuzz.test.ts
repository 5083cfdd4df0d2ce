import { afterAll, beforeAll } from "vitest";
import { RedisStore } from "../../src/stores/redis/store.js";
import { nodeFuzzSuite } from "../fuzz/node-suite.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

let server: RedisServer;
beforeAll(async () => {
  server = await startRedis();
});
afterAll(() => server?.stop());

// Fewer bodies than the memory suite: validation is the same code, the store is what differs.
nodeFuzzSuite(
  "Redis store",
  async () => {
    const store = new RedisStore({ url: server.url, keyPrefix: "fuzz:" });
    await store.ready();
    return store;
  },
  1000,
);
