import http from "node:http";
import type { AddressInfo } from "node:net";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { rateLimit } from "../../../src/http/middleware.js";
import { rateLimit as nodeRateLimit } from "../../../src/node/http/middleware.js";
import { MemoryStore } from "../../../src/stores/memory.js";

// rateLimit() on Hono and Node: a key function that answers an array (a composite key, joined
// as the gateway joins one) and `overrides` as a config writes them.

const perMinute = { name: "per-minute", algorithm: "fixed-window", limit: 2, period: "1m" };
const overrides = [
  { key: "acme|*", limit: 4 },
  { key: "acme|10.0.0.1", limit: 1 },
];

describe("rateLimit() (Hono): composite keys and overrides", () => {
  const app = new Hono();
  app.use("/api/*", rateLimit({ store: new MemoryStore(), policies: perMinute, overrides, log: () => {}, key: (c) => [c.req.header("x-tenant"), c.req.header("x-ip")] }));
  app.get("/api/*", (c) => c.text("ok"));
  const statuses = async (tenant: string | undefined, ip: string, count: number) => {
    const result: number[] = [];
    for (let i = 0; i < count; i++) result.push((await app.request("/api/x", { headers: { ...(tenant ? { "x-tenant": tenant } : {}), "x-ip": ip } })).status);
    return result;
  };

  it("a wildcard override on the joined key, an exact one beating it, the policy for everyone else", async () => {
    expect(await statuses("acme", "10.0.0.2", 5)).toEqual([200, 200, 200, 200, 429]);
    expect(await statuses("acme", "10.0.0.1", 2)).toEqual([200, 429]);
    expect(await statuses("other", "10.0.0.2", 3)).toEqual([200, 200, 429]);
    const response = await app.request("/api/x", { headers: { "x-tenant": "acme", "x-ip": "10.0.0.9" } });
    expect(response.headers.get("ratelimit-policy")).toBe('"per-minute";q=4;w=60');
  });

  it("a missing part is a 400 that names it", async () => {
    const response = await app.request("/api/x", { headers: { "x-ip": "10.0.0.2" } });
    expect(response.status).toBe(400);
    expect(((await response.json()) as { detail: string }).detail).toMatch(/part 0 of the composite key is missing/);
  });

  it("refuses bad overrides when built, naming the option", () => {
    const build = (more: Record<string, unknown>) => () => rateLimit({ store: new MemoryStore(), policies: perMinute, key: () => "k", ...more });
    expect(build({ overrides: { key: "a", limit: 1 } })).toThrow(/^rateLimit: overrides must be an array/);
    expect(build({ overrides: [{ key: "a", limit: 0 }] })).toThrow(/^rateLimit: overrides\.0\.limit: /);
    expect(build({ overrides: [{ key: "a", burst: 3 }] })).toThrow(/^rateLimit: overrides\.0\.burst: /);
    expect(build({ overrides: [{ key: "a", limit: 1, source: "ip" }] })).toThrow(/^rateLimit: overrides\.0\.source is for a gateway route's key source/);
    expect(build({ overrides: [{ key: "a", limit: 1, policy: "nope" }] })).toThrow(/^rateLimit: overrides\.0\.policy: no policy named "nope"/);
    const stack = [perMinute, { name: "per-hour", algorithm: "fixed-window", limit: 9, period: "1h" }];
    expect(build({ policies: stack, overrides: [{ key: "a", limit: 1 }] })).toThrow(/^rateLimit: overrides\.0\.policy is required/);
    expect(build({ policies: stack, overrides: [{ policy: "per-hour", key: "a", limit: 1 }] })).not.toThrow();
  });
});

describe("rateLimit() (Node): composite keys and overrides", () => {
  it("joins the key function's array and applies overrides to the joined key", async () => {
    const limit = nodeRateLimit({ store: new MemoryStore(), policies: perMinute, overrides: [{ key: "vip|*", limit: 3 }], log: () => {}, key: (req) => [req.headers["x-tier"] as string, req.socket.remoteAddress] });
    const server = http.createServer((req, res) => void limit(req, res, () => res.end("ok")));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
    try {
      const statuses = async (tier: string, count: number) => {
        const result: number[] = [];
        for (let i = 0; i < count; i++) {
          const response = await fetch(url, { headers: { "x-tier": tier } });
          await response.text();
          result.push(response.status);
        }
        return result;
      };
      expect(await statuses("vip", 4)).toEqual([200, 200, 200, 429]);
      expect(await statuses("basic", 3)).toEqual([200, 200, 429]);
      const missing = await fetch(url);
      expect(missing.status).toBe(400);
      await missing.text();
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});
