import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { rawExchange } from "./gateway-helpers.js";

// /v1/forward-auth spoken to directly, in the request shapes the proxies send: Traefik's
// ForwardAuth (X-Forwarded-*, any method), nginx's auth_request recipe (X-Original-*), and bad input.
describe("spillway serve's /v1/forward-auth", () => {
  let server: RunningServer;
  const limiter = new MemoryStore();

  beforeAll(async () => {
    const config = parseConfig({
      origin: "http://127.0.0.1:9", // never asked: the endpoint only decides
      trustProxy: ["127.0.0.1"],
      policies: [
        { name: "two", algorithm: "fixed-window", limit: 2, period: "1h" },
        { name: "one", algorithm: "fixed-window", limit: 1, period: "1h" },
        { name: "slots", algorithm: "concurrency", limit: 5, lease: "1m" },
      ],
      overrides: [{ policy: "two", key: "gold", source: "header:x-api-key", limit: 5 }],
      routes: [
        { match: { path: "/orders/*", methods: ["POST"], host: "api.example.com" }, key: "header:x-api-key", policies: ["two"] },
        { match: { path: "/by-ip/*" }, key: "ip", policies: ["one"] },
        { match: { path: "/dry/*" }, key: "ip", policies: ["one"], dryRun: true },
        { match: { path: "/counted/*" }, key: "ip", policies: ["two"], count: { status: ["2xx"] } },
        { match: { path: "/leased/*" }, key: "ip", policies: ["slots"] },
      ],
      deny: { ips: ["198.51.100.0/24"] },
    });
    const fallback = createNodeGateway({ config, limiter, log: () => {} });
    server = await startServer({ config, limiter, port: 0, fallback, token: "t", drainTimeoutMs: 100 });
  });
  afterAll(async () => {
    await server?.close();
  });

  const ask = (fields: Record<string, string>, options: { method?: string; query?: string; localAddress?: string } = {}) =>
    new Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }>((resolve, reject) => {
      const req = http.request({ host: "127.0.0.1", port: server.port, method: options.method ?? "GET", path: `/v1/forward-auth${options.query ?? ""}`, headers: fields, localAddress: options.localAddress }, (res) => {
        let body = "";
        res.on("data", (chunk: Buffer) => (body += chunk.toString()));
        res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
      });
      req.on("error", reject);
      req.end();
    });
  const traefik = (uri: string, extra: Record<string, string> = {}) => ({ "x-forwarded-method": "POST", "x-forwarded-proto": "https", "x-forwarded-host": "api.example.com", "x-forwarded-uri": uri, "x-forwarded-for": "203.0.113.9", ...extra });

  it("decides Traefik's shape by the route's host and method, on any method of its own, and counts it", async () => {
    const first = await ask(traefik("/orders/1?page=2", { "x-api-key": "k1" }));
    expect([first.status, first.headers["spillway-route"], first.headers.ratelimit]).toEqual([200, "routes.0", expect.stringMatching(/^"two";r=1;t=\d+$/)]);
    expect((await ask(traefik("/orders/2", { "x-api-key": "k1" }), { method: "POST" })).status).toBe(200);
    const third = await ask(traefik("/orders/3", { "x-api-key": "k1" }), { method: "PUT" });
    expect(third.status).toBe(429);
    expect(Number(third.headers["retry-after"])).toBeGreaterThan(0);
    expect(third.headers["ratelimit-policy"]).toBe('"two";q=2;w=3600');
    expect(JSON.parse(third.body)).toMatchObject({ status: 429, "violated-policies": ["two"] });
  });

  it("applies an override by key source, as the gateway does", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) statuses.push((await ask(traefik("/orders/1", { "x-api-key": "gold" }))).status);
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
  });

  it("allows, and says so, what no route matches: another method, another host, another path", async () => {
    for (const fields of [traefik("/orders/1", { "x-api-key": "k1", "x-forwarded-method": "GET" }), traefik("/orders/1", { "x-api-key": "k1", "x-forwarded-host": "other.example" }), traefik("/elsewhere")]) {
      const answer = await ask(fields);
      expect([answer.status, answer.headers["spillway-route"], answer.headers.ratelimit]).toEqual([200, "none", undefined]);
    }
  });

  it("keys by the client address the proxy forwards (X-Forwarded-For through trustProxy), and its deny list", async () => {
    const nginx = (ip: string) => ({ "x-original-method": "GET", "x-original-uri": "/by-ip/x", host: "api.example.com", "x-forwarded-for": ip });
    expect((await ask(nginx("192.0.2.1"))).status).toBe(200);
    expect((await ask(nginx("192.0.2.1"))).status).toBe(429);
    expect((await ask(nginx("192.0.2.2"))).status).toBe(200);
    expect((await ask(nginx("198.51.100.7"))).status).toBe(403);
  });

  it("answers nginx's deny_status: the limit's refusal as 401, any other as 403, the real status beside", async () => {
    const nginx = { "x-original-method": "GET", "x-original-uri": "/by-ip/y", "x-forwarded-for": "192.0.2.50" };
    expect((await ask(nginx, { query: "?deny_status=401" })).status).toBe(200);
    const limited = await ask(nginx, { query: "?deny_status=401" });
    expect([limited.status, limited.headers["spillway-status"], limited.headers["retry-after"] !== undefined]).toEqual([401, "429", true]);
    const bad = await ask({ "x-original-method": "GET" }, { query: "?deny_status=401" });
    expect([bad.status, bad.headers["spillway-status"]]).toEqual([403, "400"]);
    const wrong = await ask(nginx, { query: "?deny_status=402" });
    expect(wrong.status).toBe(400);
    expect(JSON.parse(wrong.body).detail).toContain("deny_status must be 401 or 403");
  });

  it("runs a dry-run route dry: over the limit still admitted, and marked", async () => {
    const fields = { "x-forwarded-method": "GET", "x-forwarded-uri": "/dry/x", "x-forwarded-for": "192.0.2.9" };
    expect((await ask(fields)).status).toBe(200);
    const over = await ask(fields);
    expect([over.status, over.headers["spillway-dry-run"]]).toEqual([200, "denied"]);
  });

  it("refuses a route that counts the origin's answer (it never comes here) rather than admit it uncounted", async () => {
    const answer = await ask({ "x-forwarded-method": "GET", "x-forwarded-uri": "/counted/x", "x-forwarded-for": "192.0.2.10" });
    expect(answer.status).toBe(501);
    expect(JSON.parse(answer.body).detail).toContain("routes.3 counts what the origin answers");
  });

  it("refuses a concurrency route (the exchange's end never comes here) and gives its slot back", async () => {
    for (let i = 0; i < 7; i++) {
      const answer = await ask({ "x-forwarded-method": "GET", "x-forwarded-uri": "/leased/x", "x-forwarded-for": "192.0.2.11" });
      expect([answer.status, JSON.parse(answer.body).detail]).toEqual([501, expect.stringContaining("routes.4 holds a concurrency lease")]);
    }
  });

  it("gives bad input the gateway's own 400s, naming the field", async () => {
    const cases: [Record<string, string>, string][] = [
      [{ "x-forwarded-uri": "/by-ip/x" }, "neither X-Forwarded-Method nor X-Original-Method"],
      [{ "x-forwarded-method": "GE(T", "x-forwarded-uri": "/by-ip/x" }, "x-forwarded-method must be an HTTP method"],
      [{ "x-forwarded-method": "GET" }, "neither X-Forwarded-Uri nor X-Original-URI"],
      [{ "x-forwarded-method": "GET", "x-forwarded-uri": "by-ip/x" }, "x-forwarded-uri must be an origin-form URI"],
      [{ "x-forwarded-method": "GET", "x-forwarded-uri": "/by-ip/a%2Fb" }, 'encoded "/"'],
      [{ "x-forwarded-method": "POST", "x-forwarded-host": "api.example.com", "x-forwarded-uri": "/orders/1" }, "does not carry"],
    ];
    const twice = await rawExchange(server.port, "GET /v1/forward-auth HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-Method: POST\r\nX-Forwarded-Host: api.example.com\r\nX-Forwarded-Uri: /orders/1\r\nX-Api-Key: a\r\nX-Api-Key: b\r\nConnection: close\r\n\r\n");
    expect(twice.split("\r\n")[0]).toBe("HTTP/1.1 400 Bad Request");
    expect(twice).toContain("more than once");
    for (const [fields, detail] of cases) {
      const answer = await ask({ "x-forwarded-for": "192.0.2.77", ...fields });
      expect([answer.status, JSON.parse(answer.body).detail]).toEqual([400, expect.stringContaining(detail)]);
    }
  });

  it("refuses forwarded fields from an address trustProxy does not list", async () => {
    const answer = await ask(traefik("/orders/1", { "x-api-key": "k9" }), { localAddress: "127.0.0.2" });
    expect(answer.status).toBe(403);
    expect(JSON.parse(answer.body).detail).toBe("127.0.0.2 is not in trustProxy: forward-auth believes forwarded fields only from the proxy addresses trustProxy lists");
  });
});
