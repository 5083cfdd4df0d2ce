import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { RedisStore } from "../../src/stores/redis/store.js";
import { type OwnRedisStore, startOwnRedisStore } from "./own-redis-store.js";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin, waitFor } from "../unit/node/http/gateway-helpers.js";

// The request body's fields on the Node gateway over Redis (docs/counting.md, "Fields of the
// request body"): a json: key and a max_tokens estimate read from the body, each reservation a
// Redis check, each settle a refund; the origin gets every body byte for byte.
const TOKENS = parsePolicy({ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }, "policy");
const config = {
  policies: [{ name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" }],
  routes: [{ match: { path: "/v1/*" }, key: "json:user", policies: ["tokens"], cost: { responseJson: "usage.total_tokens", max: 8000 }, estimate: { requestJson: "max_tokens", promptTokensPerByte: 0 } }],
};

let redis: OwnRedisStore;
let store: RedisStore;
let origin: Running;
let gateway: GatewayUnderTest;
let reached = 0;
const bodies: string[] = [];
const held: http.ServerResponse[] = [];

beforeAll(async () => {
  redis = await startOwnRedisStore();
  store = redis.store;
  origin = await startOrigin((req, res) => {
    reached++;
    let body = "";
    req.setEncoding("utf8").on("data", (chunk: string) => (body += chunk));
    req.on("end", () => {
      bodies.push(body);
      held.push(res);
    });
  });
  gateway = await startGateway({ ...config, origin: origin.url }, store);
});
afterAll(async () => {
  await gateway?.close();
  await origin?.close();
  await redis?.stop();
});

describe("Node gateway over Redis: request body fields", () => {
  it("20 requests at once keyed by json:user, max_tokens 2,000 against 10,000 tokens: 5 reach the origin, bodies unchanged, the unused 2,500 come back", async () => {
    const user = `user-${Date.now()}`;
    const body = JSON.stringify({ model: "m", user, max_tokens: 2000, messages: [{ role: "user", content: "héllo" }] });
    const remaining = async () => (await store.peek(`json:user:${user}`, [TOKENS])).remaining;
    const sent = Array.from({ length: 20 }, () => request(`${gateway.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body }));
    let refused = 0;
    for (const one of sent) void one.then((answered) => answered.status === 429 && refused++);
    await waitFor(() => reached + refused === 20 && held.length === reached, 10_000);
    expect(reached).toBe(5);
    expect(await remaining()).toBe(0);
    expect(bodies).toEqual(Array(5).fill(body));
    for (const res of held.splice(0)) res.writeHead(200, { "content-type": "application/json" }).end('{"usage":{"total_tokens":1500}}');
    expect((await Promise.all(sent)).filter((answered) => answered.status === 429)).toHaveLength(15);
    await waitFor(async () => (await remaining()) === 2500, 10_000);
  });
});
