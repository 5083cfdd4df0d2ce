import { afterAll, beforeAll, describe, expect, it } from "vitest";
import WebSocket from "ws";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { echoOf as echo, openWebSocket as open } from "./websocket-client.js";
import { type WsOrigin, startWsOrigin } from "../../../conformance/ws-origin.js";
import type { Limiter } from "../../../../src/core/limiter.js";
import { type GatewayUnderTest, ownStore, request, startGateway } from "./gateway-helpers.js";

// What only the Node edge does with upgrades (the shared cases are the gateway table's): which
// upgrades it takes, request targets the plain-request edge would hand to Hono, server
// timeouts and close. Against the real `ws` origin on loopback.
let origin: WsOrigin;
let gateway: GatewayUnderTest;
const config = {
  policies: [{ name: "three", algorithm: "fixed-window", limit: 3, period: "1h" }, { name: "slot", algorithm: "concurrency", limit: 1, lease: "30s" }],
  routes: [
    { match: { path: "/three/*" }, key: "header:x-user", policies: ["three"] },
    { match: { path: "/slot/*" }, key: "header:x-user", policies: ["slot"] },
  ],
};

beforeAll(async () => {
  origin = await startWsOrigin();
  gateway = await startGateway({ ...config, origin: origin.url });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});


describe("Node gateway: WebSocket upgrades", () => {
  it("proxies an upgrade whose target has percent-encoding (which plain requests leave to the Hono edge)", async () => {
    const ws = await open(gateway.port, "/three/echo?token=a%20b", { "x-user": crypto.randomUUID() });
    expect(await echo(ws, "hi")).toBe("hi");
    ws.close();
  });

  it("answers a 101 to a plain request with a 502 on the Hono edge too (a target with percent-encoding)", async () => {
    const user = crypto.randomUUID();
    for (let i = 0; i < 2; i++) {
      const response = await request(`${gateway.url}/slot/plain101?q=%20`, { headers: { "x-user": user } });
      expect(response.status).toBe(502);
      expect(JSON.parse(response.body.toString())).toMatchObject({ detail: expect.stringContaining("101 Switching Protocols") });
    }
  });

  it("leaves Spillway's own paths and other protocols' upgrades to plain requests, Upgrade stripped", async () => {
    const health = await request(`${gateway.url}/healthz`, { headers: { connection: "upgrade", upgrade: "websocket", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" } });
    expect(health.status).toBe(200);
    expect(JSON.parse(health.body.toString())).toMatchObject({ ok: true });
    const before = origin.handshakes();
    const h2c = await request(`${gateway.url}/three/plain`, { headers: { connection: "upgrade, http2-settings", upgrade: "h2c", "http2-settings": "AAMAAABkAAQAAP__", "x-user": crypto.randomUUID() } });
    expect([h2c.status, h2c.body.toString()]).toEqual([200, "ok"]);
    expect(origin.handshakes()).toBe(before);
  });

  it("keeps a proxied WebSocket past the server's request and headers timeouts", async () => {
    const config2 = parseConfig({ ...config, origin: origin.url });
    const limiter = new MemoryStore();
    const fallback = createNodeGateway({ config: config2, limiter, log: () => {} });
    const server = await startServer({ config: config2, limiter, port: 0, fallback, drainTimeoutMs: 100, timeouts: { headersTimeoutMs: 200, requestTimeoutMs: 300, keepAliveTimeoutMs: 200 } });
    try {
      const ws = await open(server.port, "/three/echo", { "x-user": crypto.randomUUID() });
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(ws.readyState).toBe(WebSocket.OPEN);
      expect(await echo(ws, "still")).toBe("still");
      ws.close();
    } finally {
      await server.close();
    }
  });

  it("cuts open WebSockets when the server closes, rather than waiting for them, and releases their leases before closing the store", async () => {
    const config2 = parseConfig({ ...config, origin: origin.url });
    const memory = new MemoryStore();
    const events: string[] = [];
    const limiter: Limiter = {
      ...ownStore(memory),
      release: async (key, policies, leaseId) => {
        const released = await memory.release(key, policies, leaseId);
        events.push(`released ${released.released}`);
        return released;
      },
      close: async () => void events.push("store closed"),
    };
    const fallback = createNodeGateway({ config: config2, limiter, log: () => {} });
    const server = await startServer({ config: config2, limiter, port: 0, fallback, drainTimeoutMs: 60_000 });
    const ws = await open(server.port, "/slot/echo", { "x-user": "closing" });
    const closed = new Promise<number>((resolve) => ws.once("close", (code) => resolve(code)));
    await server.close(); // would wait out the 60 s drain if the socket were left to finish
    expect(await closed).toBe(1006);
    expect(events).toEqual(["released true", "store closed"]);
  });
});

describe("Node gateway: WebSocket upgrades on a server without a gateway", () => {
  it("answers an upgrade to an unknown path like a plain request", async () => {
    const limiter = new MemoryStore();
    const server = await startServer({ config: parseConfig({ policies: config.policies }), limiter, port: 0, drainTimeoutMs: 100 });
    try {
      const response = await request(`${server.url}/nowhere`, { headers: { connection: "upgrade", upgrade: "websocket" } });
      expect(response.status).toBe(404);
    } finally {
      await server.close();
    }
  });
});

