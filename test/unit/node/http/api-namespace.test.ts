import http from "node:http";
import { Hono } from "hono";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../../../src/core/policy.js";
import { rateLimit as honoRateLimit } from "../../../../src/http/middleware.js";
import { rateLimit as nodeRateLimit } from "../../../../src/node/http/middleware.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { NAMESPACE_CONFIG, apiNamespaceConformance, keySourcesConformance, serveNamespaceDriver } from "../../../conformance/api-namespace-table.js";
import { type GatewayUnderTest, type Running, startGateway, startOrigin } from "./gateway-helpers.js";

// `spillway serve` on the memory store: /v1 keys and gateway route keys apart (the table's cases).
let origin: Running & { server: http.Server };
let gateway: GatewayUnderTest;
beforeAll(async () => {
  origin = await startOrigin((_req, res) => res.end("ok"));
  gateway = await startGateway({ ...NAMESPACE_CONFIG, origin: origin.url });
});
afterAll(async () => {
  await gateway?.close();
  await origin?.close();
});

apiNamespaceConformance("spillway serve (memory store)", () => serveNamespaceDriver(gateway.url, gateway.limiter));
keySourcesConformance("spillway serve", () => serveNamespaceDriver(gateway.url, gateway.limiter));

describe("rateLimit(): the middleware's keys are the API's, apart from a route's", () => {
  const policy = { name: "mw-three", algorithm: "fixed-window", limit: 3, period: "1h" } as const;
  const THREE = parsePolicy(policy, "policy");

  it("Hono: a key function answering `header:x-api-key:victim` counts under its own store key; overrides still match the key as given", async () => {
    const store = new MemoryStore();
    const app = new Hono();
    app.use("*", honoRateLimit({ store, policies: policy, key: (c) => c.req.header("x-key"), overrides: [{ key: "header:x-api-key:big", limit: 5 }] }));
    app.get("/", (c) => c.text("ok"));
    for (let i = 0; i < 3; i++) expect((await app.request("/", { headers: { "x-key": "header:x-api-key:victim" } })).status).toBe(200);
    expect((await store.peek("header:x-api-key:victim", [THREE])).remaining).toBe(3);
    expect((await app.request("/", { headers: { "x-key": "header:x-api-key:big" } })).headers.get("ratelimit")).toMatch(/^"mw-three";r=4;/);
    // A plain key keeps its store key.
    await app.request("/", { headers: { "x-key": "user:42" } });
    expect((await store.peek("user:42", [THREE])).remaining).toBe(2);
  });

  it("node:http: the same", async () => {
    const store = new MemoryStore();
    const limit = nodeRateLimit({ store, policies: policy, key: (req) => req.headers["x-key"] as string });
    const server = http.createServer((req, res) => limit(req, res, () => res.end("ok")));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const { port } = server.address() as { port: number };
    try {
      for (let i = 0; i < 3; i++) expect((await fetch(`http://127.0.0.1:${port}/`, { headers: { "x-key": "ip:192.0.2.1" } })).status).toBe(200);
      expect((await store.peek("ip:192.0.2.1", [THREE])).remaining).toBe(3);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
