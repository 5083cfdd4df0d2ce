import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunningServer, startServer } from "../../src/node/serve/server.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { refundCases, refundConfig, refundRefusals } from "../unit/node/serve/refund-http-cases.js";

let redis: RedisServer;
let client: Redis;
let store: RedisStore;
let server: RunningServer;
beforeAll(async () => {
  redis = await startRedis();
  client = new Redis(redis.url, REDIS_CLIENT_OPTIONS);
  store = new RedisStore({ client, log: () => {} });
  expect(await store.ready(10_000)).toBe(true);
  server = await startServer({ config: refundConfig, limiter: store, port: 0, token: "secret" });
});
afterAll(async () => {
  await server?.close();
  await store?.close();
  client?.disconnect();
  await redis?.stop();
});

const send = async (route: string, body: unknown) => {
  const response = await fetch(`${server.url}/v1/${route}`, { method: "POST", headers: { authorization: "Bearer secret", "content-type": "application/json" }, body: JSON.stringify(body) });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe("/v1/check refunds on spillway serve (Redis)", () => {
  it("gives back by each algorithm's rule", () => refundCases(send, "redis"));
  it("refuses a negative cost without mode debit naming cost, and a concurrency stack naming mode", () => refundRefusals(send, "redis"));
});
