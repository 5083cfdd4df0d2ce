import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type GatewayUnderTest, type Running, deferred, request, startGateway, startGatewayToClosedOrigin, startOrigin, waitFor } from "./gateway-helpers.js";

// Limiting through the Node gateway in front of a real loopback origin.
let origin: Running & { server: http.Server };
let gateway: GatewayUnderTest;
let originHits = 0;
let handler: http.RequestListener = (_req, res) => res.end("ok");

const slot = { name: "slot", algorithm: "concurrency", limit: 1, lease: "30s" };
let counter = 0;
const user = () => `user-${++counter}-${Math.random().toString(36).slice(2)}`;

beforeAll(async () => {
  origin = await startOrigin((req, res) => {
    originHits++;
    handler(req, res);
  });
  gateway = await startGateway({
    origin: origin.url,
    policies: [
      { name: "three", algorithm: "fixed-window", limit: 3, period: "1h" },
      { name: "by-ip", algorithm: "fixed-window", limit: 3, period: "1h" },
      { name: "spaced", algorithm: "gcra", limit: 5, period: "1s", burst: 1 },
      slot,
    ],
    routes: [
      { match: { path: "/three/*" }, key: "header:x-user", policies: ["three"] },
      { match: { path: "/by-ip/*" }, key: "ip", policies: ["by-ip"] },
      { match: { path: "/fallback/*" }, key: "header:x-user", fallbackKey: "const:anonymous", policies: ["three"] },
      { match: { path: "/delay/*" }, key: "header:x-user", policies: ["spaced"], onLimit: "delay", maxDelayMs: 500 },
      { match: { path: "/dry/*" }, key: "header:x-user", policies: ["three"], dryRun: true },
      { match: { path: "/slot/*" }, key: "header:x-user", policies: [slot.name] },
      { match: { path: "/feedback/*", methods: ["GET"] }, key: "header:x-user", policies: ["three"] },
    ],
    deny: { ips: ["192.0.2.0/24"], keys: ["banned"] },
    allow: { keys: ["vip"] },
    originFeedback: true,
  });
});
afterAll(async () => {
  await gateway.close();
  await origin.close();
});

const get = (path: string, headers: Record<string, string> = {}) => request(`${gateway.url}${path}`, { headers });

describe("Node gateway: limits", () => {
  it("answers 200s, then 429 with Retry-After, RateLimit fields and a quota-exceeded problem", async () => {
    handler = (_req, res) => res.end("ok");
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

  it("delay holds a request until its reserved slot, at most maxDelayMs", async () => {
    handler = (_req, res) => res.end("ok");
    const headers = { "x-user": user() };
    const started = performance.now();
    const timed = async () => {
      const response = await get("/delay/a", headers);
      return { status: response.status, ms: performance.now() - started };
    };
    // One per 200 ms, burst 1: slots at 0, 200, 400 ms; the fourth (600 ms) is past maxDelayMs.
    const results = await Promise.all([timed(), timed(), timed(), timed()]);
    const admitted = results.filter((r) => r.status === 200).map((r) => r.ms).sort((a, b) => a - b);
    expect(results.filter((r) => r.status === 429)).toHaveLength(1);
    expect(admitted).toHaveLength(3);
    // Lower bounds are the point (held until the slot); the upper one only rules out "never".
    expect(admitted[1]).toBeGreaterThanOrEqual(180);
    expect(admitted[2]).toBeGreaterThanOrEqual(380);
    expect(admitted[2]).toBeLessThan(2000);
  });

  it("dry run never blocks but reports in headers and logs", async () => {
    const headers = { "x-user": user() };
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push(await get("/dry/a", headers));
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
    expect(statuses.map((r) => r.headers["spillway-dry-run"])).toEqual(["allowed", "allowed", "allowed", "denied", "denied"]);
    expect(statuses[4]!.headers["ratelimit"]).toMatch(/^"three";r=0;/);
    expect(statuses[4]!.headers["retry-after"]).toBeUndefined();
    expect(gateway.logs.filter((entry) => entry.event === "dry-run-deny" && String(entry.key).includes(headers["x-user"]))).toHaveLength(2);
  });

  it("deny lists refuse addresses and keys with 403; allow lists skip limiting", async () => {
    expect((await get("/three/a", { "x-user": "banned" })).status).toBe(403);
    const statuses = [];
    for (let i = 0; i < 5; i++) statuses.push((await get("/three/a", { "x-user": "vip" })).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200]);
  });

  it("an origin 429 with Retry-After pauses that key for every caller until then", async () => {
    const busy = user();
    let originSaw = 0;
    handler = (req, res) => {
      if (req.headers["x-user"] === busy) originSaw++;
      if (req.headers["x-user"] === busy && originSaw === 1) res.writeHead(429, { "retry-after": "1" }).end("busy");
      else res.end("ok");
    };
    expect((await get("/feedback/a", { "x-user": busy })).status).toBe(429);
    await waitFor(async () => (await get("/feedback/a", { "x-user": busy })).status === 429);
    const paused = await get("/feedback/b", { "x-user": busy });
    expect(paused.status).toBe(429);
    expect(JSON.parse(paused.body.toString())["violated-policies"]).toEqual(["origin-retry-after"]);
    expect(paused.headers["retry-after"]).toBe("1");
    expect(originSaw).toBe(1);
    expect((await get("/feedback/a", { "x-user": user() })).status).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect((await get("/feedback/a", { "x-user": busy })).status).toBe(200);
    expect(originSaw).toBe(2);
  });
});

describe("Node gateway: concurrency leases", () => {
  it("holds the lease while the answer streams and releases it when the answer ends", async () => {
    const headers = { "x-user": user() };
    const finish = deferred();
    const started = deferred();
    handler = async (_req, res) => {
      res.writeHead(200);
      res.write("start");
      started.resolve();
      await finish.promise;
      res.end("end");
    };
    const first = request(`${gateway.url}/slot/a`, { headers });
    await started.promise;
    expect((await get("/slot/a", headers)).status).toBe(429);
    finish.resolve();
    expect((await first).body.toString()).toBe("startend");
    handler = (_req, res) => res.end("ok");
    await waitFor(async () => (await get("/slot/a", headers)).status === 200);
  });

  it("releases the lease when the client aborts mid-answer", async () => {
    const headers = { "x-user": user() };
    const started = deferred();
    handler = (_req, res) => {
      res.writeHead(200);
      res.write("partial");
      started.resolve();
      // Never ends by itself.
    };
    const client = http.get(`${gateway.url}/slot/a`, { headers, agent: false }, (res) => res.on("data", () => {}));
    client.on("error", () => {});
    await started.promise;
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect((await get("/slot/a", headers)).status).toBe(429);
    client.destroy();
    handler = (_req, res) => res.end("ok");
    await waitFor(async () => (await get("/slot/a", headers)).status === 200);
  });

  it("releases the lease when the origin fails mid-answer", async () => {
    const headers = { "x-user": user() };
    handler = (_req, res) => {
      res.writeHead(200, { "content-length": "100" });
      res.write("only part");
      setTimeout(() => res.socket?.destroy(), 20);
    };
    await expect(request(`${gateway.url}/slot/a`, { headers })).rejects.toThrow();
    handler = (_req, res) => res.end("ok");
    await waitFor(async () => (await get("/slot/a", headers)).status === 200);
  });

  it("releases the lease when the origin cannot be reached", async () => {
    const down = await startGatewayToClosedOrigin({ policies: [slot], routes: [{ match: { path: "/*" }, key: "const:all", policies: ["slot"] }] });
    try {
      expect((await request(`${down.url}/a`)).status).toBe(502);
      expect((await request(`${down.url}/a`)).status).toBe(502); // not 429: the first lease was released
      expect((await down.limiter.peek("const:all", [{ name: "slot", algorithm: "concurrency", limit: 1, periodMs: 1000, burst: 1, leaseMs: 30_000, failMode: "closed" }])).remaining).toBe(1);
    } finally {
      await down.close();
    }
  });
});
