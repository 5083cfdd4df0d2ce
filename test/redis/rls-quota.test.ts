import { afterAll, beforeAll } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { QUOTA_NOW_MS, describeQuotaSuite } from "../unit/node/grpc/quota-suite.js";

let redis: RedisServer;
beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
});

// A fresh database per server (FLUSHDB), on the client clock fixed at QUOTA_NOW_MS.
describeQuotaSuite("Redis", async () => {
  const limiter = new RedisStore({ url: redis.url, clock: "client", clockMs: () => QUOTA_NOW_MS, timeoutMs: 1000, log: () => {} });
  await limiter.ready();
  await limiter.client.flushdb();
  return { limiter, close: () => limiter.close() };
});
