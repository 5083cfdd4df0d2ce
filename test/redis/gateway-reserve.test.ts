import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { RedisStore } from "../../src/stores/redis/store.js";
import { type OwnRedisStore, startOwnRedisStore } from "./own-redis-store.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "../unit/node/http/gateway-helpers.js";

// Reserve, then settle on the Node gateway over Redis (docs/counting.md): the burst of
// test/unit/node/http/gateway-reserve.test.ts, each reservation a Redis check, each settle a
// refund through debit.lua.
const TOKENS = parsePolicy({ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }, "policy");
const config = {
  policies: [{ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }],
  routes: [{ match: { path: "/v1/*" }, key: "header:x-user", policies: ["tokens"], cost: { responseJson: "usage.total_tokens", max: 8000 }, estimate: 2000 }],
};

let redis: OwnRedisStore;
let store: RedisStore;
let origin: Running;
let gateway: GatewayUnderTest;
let reached = 0;
const held: http.ServerResponse[] = [];

beforeAll(async () => {
  redis = await startOwnRedisStore();
  store = redis.store;
  origin = await startOrigin((_req, res) => {
    reached++;
    held.push(res);
  });
  gateway = await startGateway({ ...config, origin: origin.url }, store);
});
afterAll(async () => {
  await gateway?.close();
  await origin?.close();
  await redis?.stop();
});

describe("Node gateway over Redis: reserve, then settle", () => {
  it("20 requests at once, an estimate of 2,000 against 10,000 tokens: 5 reach the origin, and the unused 2,500 come back", async () => {
    const user = `user-${Date.now()}`;
    const remaining = async () => (await store.peek(`header:x-user:${user}`, [TOKENS])).remaining;
    const sent = Array.from({ length: 20 }, () => request(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "x-user": user, "content-type": "application/json" }, body: "{}" }));
    let refused = 0;
    for (const one of sent) void one.then((answered) => answered.status === 429 && refused++);
    await waitFor(() => reached + refused === 20, 10_000);
    expect(reached).toBe(5);
    expect(await remaining()).toBe(0);
    for (const res of held.splice(0)) res.writeHead(200, { "content-type": "application/json" }).end('{"usage":{"total_tokens":1500}}');
    expect((await Promise.all(sent)).filter((answered) => answered.status === 429)).toHaveLength(15);
    await waitFor(async () => (await remaining()) === 2500, 10_000);
  });
});
