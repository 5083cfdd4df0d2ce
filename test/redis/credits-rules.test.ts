import { afterAll, beforeAll } from "vitest";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { creditsRulesSuite } from "../unit/node/serve/credits-rules-suite.js";

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
  // A generous timeout: these are rules, not timing, and a balance's call that Redis runs past
  // its deadline (timeout less a guard) fails with 503 on a loaded machine (credits-deadline.test.ts).
  store = new RedisStore({ url: server.url, timeoutMs: 1000 });
  await store.ready();
  return store;
});
