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
      { match: { path: "/by-cookie/*" }, key: "cookie:sid", policies: ["three"] },
    ],
    deny: { ips: [], keys: ["banned"] },
  });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

const get = (path: string, headers: http.OutgoingHttpHeaders = {}) => request(`${gateway.url}${path}`, { headers });
const detailOf = (answer: { body: Buffer }) => (JSON.parse(answer.body.toString()) as { detail: string }).detail;
const UPGRADE = { connection: "upgrade", upgrade: "websocket", "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==", "sec-websocket-version": "13" };

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

  it("refuses a key header sent on two lines (400 naming it), on a plain request and an upgrade; one line is counted as always", async () => {
    const user = crypto.randomUUID();
    // node:http sends an array as one line per value: what a client that repeats a field sends.
    for (const headers of [{ "x-user": [user, "banned"] }, { "x-user": ["banned", user] }, { ...UPGRADE, "x-user": [user, "banned"] }]) {
      const answer = await get("/three/a", headers);
      expect(answer.status).toBe(400);
      expect(detailOf(answer)).toMatch(/the x-user header more than once/);
    }
    // A target with percent-encoding, which the node:http edge leaves to the Hono edge: the same.
    const encoded = await get("/three/%61", { "x-user": [user, "banned"] });
    expect(encoded.status).toBe(400);
    expect(detailOf(encoded)).toMatch(/the x-user header more than once/);
    expect((await get("/three/a", { "x-user": "banned" })).status).toBe(403);
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await get("/three/a", { "x-user": user })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
  });

  it("reads two Cookie lines as one field (joined by \"; \", as node:http does): a cookie in each is two, refused", async () => {
    const twice = await get("/by-cookie/a", { cookie: [`sid=${crypto.randomUUID()}`, "sid=banned"] });
    expect(twice.status).toBe(400);
    expect(detailOf(twice)).toMatch(/the sid cookie more than once/);
    expect((await get("/by-cookie/a", { cookie: ["theme=dark", "sid=banned"] })).status).toBe(403);
  });
});
