import type http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayUnderTest, type Running, request, startGateway, startOrigin } from "./gateway-helpers.js";

// Limiting through the Node gateway in front of a real loopback origin: what only the Node edge
// does (keys from the socket address; a missing key). The cases both runtimes share (429
// answers, delay, dry run, allow/deny lists, trusted proxies, origin feedback, IPv6 prefixes,
// concurrency leases) are the conformance table's: test/conformance/gateway-table.ts, run by
// gateway-conformance.test.ts.
let origin: Running & { server: http.Server };
let gateway: GatewayUnderTest;

beforeAll(async () => {
  origin = await startOrigin((_req, res) => res.end("ok"));
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
