import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin } from "./gateway-helpers.js";

// Limiting through the Node gateway in front of a real loopback origin: what only the Node edge
// does (keys from the socket address). The cases both runtimes share (delay, dry run, allow/deny
// lists, trusted proxies, origin feedback, IPv6 prefixes, concurrency leases) are the
// conformance table's: test/conformance/gateway-table.ts, run by gateway-conformance.test.ts.
let origin: Running & { server: http.Server };
let gateway: GatewayUnderTest;
let originHits = 0;

let counter = 0;
const user = () => `user-${++counter}-${Math.random().toString(36).slice(2)}`;

beforeAll(async () => {
  origin = await startOrigin((_req, res) => {
    originHits++;
    res.end("ok");
  });
  gateway = await startGateway({
    origin: origin.url,
    policies: [
      { name: "three", algorithm: "fixed-window", limit: 3, period: "1h" },
      { name: "by-ip", algorithm: "fixed-window", limit: 3, period: "1h" },
    ],
    routes: [
      { match: { path: "/three/*" }, key: "header:x-user", policies: ["three"] },
      { match: { path: "/by-ip/*" }, key: "ip", policies: ["by-ip"] },
      { match: { path: "/fallback/*" }, key: "header:x-user", fallbackKey: "const:anonymous", policies: ["three"] },
    ],
  });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

const get = (path: string, headers: Record<string, string> = {}) => request(`${gateway.url}${path}`, { headers });

describe("Node gateway: limits", () => {
  it("answers 200s, then 429 with Retry-After, RateLimit fields and a quota-exceeded problem", async () => {
    const headers = { "x-user": user() };
    for (let i = 0; i < 3; i++) expect((await get("/three/a", headers)).status).toBe(200);
    const before = originHits;
    const denied = await get("/three/a", headers);
    expect(originHits).toBe(before);
    expect(denied.status).toBe(429);
    expect(denied.headers["retry-after"]).toMatch(/^\d+$/);
    expect(denied.headers["ratelimit-policy"]).toBe('"three";q=3;w=3600');
    expect(denied.headers["ratelimit"]).toMatch(/^"three";r=0;t=\d+$/);
    expect(denied.headers["content-type"]).toBe("application/problem+json");
    expect(JSON.parse(denied.body.toString())).toMatchObject({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      status: 429,
      "violated-policies": ["three"],
    });
  });

  it("keys `ip` by the socket address: spoofed forwarding headers change nothing", async () => {
    const spoofs = ["x-forwarded-for", "x-real-ip", "true-client-ip", "cf-connecting-ip", "forwarded"];
    const statuses: number[] = [];
    for (const [i, name] of spoofs.entries()) {
      const value = name === "forwarded" ? `for=198.51.100.${i}` : `198.51.100.${i}`;
      statuses.push((await get("/by-ip/x", { [name]: value })).status);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429]);
  });

  it("answers 400 when the key source is missing, or uses the fallback key", async () => {
    const missing = await get("/three/a");
    expect(missing.status).toBe(400);
    expect(JSON.parse(missing.body.toString()).detail).toMatch(/x-user header/);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get("/fallback/a")).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });
});
