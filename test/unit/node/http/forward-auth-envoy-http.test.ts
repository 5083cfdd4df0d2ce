import http from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { createNodeGateway } from "../../../../src/node/http/gateway.js";
import { type RunningServer, startServer } from "../../../../src/node/serve/server.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { type Running, rawExchange, startOrigin } from "./gateway-helpers.js";
import { envoyBootstrap, httpFilterOfDocs, startEnvoyHttpStandIn } from "./envoy-http-rig.js";
import { docBlock } from "./proxy-rig.js";

const LIMIT = 100; // the docs' config: 100 per window per x-api-key

async function get(url: string, key?: string): Promise<{ status: number; headers: Headers; body: string }> {
  const response = await fetch(url, { headers: key === undefined ? {} : { "x-api-key": key } });
  return { status: response.status, headers: response.headers, body: await response.text() };
}

function ask(port: number, path: string, options: { method?: string; headers?: Record<string, string>; localAddress?: string } = {}): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: "127.0.0.1", port, path, method: options.method ?? "GET", headers: options.headers, localAddress: options.localAddress }, (res) => {
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

// Envoy's ext_authz HTTP service in front of a real origin, `spillway serve` deciding, both
// configured from docs/proxies.md (the Envoy side through envoy-http-rig.ts's stand-in).
describe("Envoy's ext_authz HTTP service (docs/proxies.md's filter), spillway serve deciding", () => {
  const seen: { key: string; ratelimit: string; path: string }[] = [];
  let origin: Running;
  let spillway: RunningServer;
  let envoy: { url: string; close(): Promise<void> };
  const filter = httpFilterOfDocs();

  beforeAll(async () => {
    origin = await startOrigin((req, res) => {
      seen.push({ key: String(req.headers["x-api-key"] ?? ""), ratelimit: String(req.headers.ratelimit ?? ""), path: req.url ?? "" });
      res.writeHead(200, { "content-type": "text/plain" }).end("from the origin");
    });
    // The docs' config with its window an hour long: a burst that straddled a minute's end
    // (seconds under a loaded machine) would be admitted twice, once in each window.
    const config = parseConfig(JSON.parse(docBlock("json").replace("http://127.0.0.1:3000", origin.url).replace('"period": "1m"', '"period": "1h"')));
    const limiter = new MemoryStore();
    spillway = await startServer({ config, limiter, port: 0, fallback: createNodeGateway({ config, limiter, log: () => {} }), token: "t", drainTimeoutMs: 100 });
    envoy = await startEnvoyHttpStandIn(filter, { spillway: spillway.port, origin: origin.port });
  });
  afterAll(async () => {
    await envoy?.close();
    await spillway?.close();
    await origin?.close();
  });
  const seenFor = (key: string) => seen.filter((request) => request.key === key).length;

  it("reads as the docs say: the prefix, the key's field and X-Forwarded-For passed, Spillway's cluster on its port", () => {
    expect(filter).toMatchObject({ path_prefix: "/v1/forward-auth/envoy", use_remote_address: true });
    expect(filter.allowed_headers.map((m) => m.exact)).toEqual(["x-api-key", "x-forwarded-for"]);
    const cluster = envoyBootstrap("http_service").static_resources.clusters.find((entry: { name: string }) => entry.name === filter.cluster);
    expect(cluster.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value).toBe(8787);
  });

  it("admits exactly the limit of 300 requests at once; the origin sees exactly those, with the RateLimit fields", async () => {
    const answers = await Promise.all(Array.from({ length: 300 }, () => get(`${envoy.url}/api/items?page=2`, "burst-key")));
    const admitted = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 429);
    expect([admitted.length, refused.length]).toEqual([LIMIT, 300 - LIMIT]);
    expect(seenFor("burst-key")).toBe(LIMIT);
    expect(seen.filter((request) => request.key === "burst-key").every((request) => /^"per-minute";r=\d+;t=\d+$/.test(request.ratelimit) && request.path === "/api/items?page=2")).toBe(true);
    for (const answer of admitted) {
      expect(answer.body).toBe("from the origin");
      expect(answer.headers.get("ratelimit")).toMatch(/^"per-minute";r=\d+;t=\d+$/);
      expect(answer.headers.get("ratelimit-policy")).toMatch(/^"per-minute";q=100;w=3600$/);
    }
    for (const answer of refused) {
      expect(Number(answer.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(answer.headers.get("ratelimit")).toMatch(/^"per-minute";r=0;t=\d+$/);
      expect(answer.headers.get("ratelimit-policy")).toMatch(/^"per-minute";q=100;w=3600$/);
      expect(JSON.parse(answer.body)).toMatchObject({ status: 429, type: "https://iana.org/assignments/http-problem-types#quota-exceeded" });
    }
  }, 20_000);

  it("lets an allowed key through past the limit, refuses a denied one before the origin, passes unrouted paths", async () => {
    const allowed = await Promise.all(Array.from({ length: LIMIT + 5 }, () => get(`${envoy.url}/api/batch`, "internal-batch")));
    expect(allowed.every((answer) => answer.status === 200)).toBe(true);
    expect(seenFor("internal-batch")).toBe(LIMIT + 5);
    const denied = await get(`${envoy.url}/api/items`, "leaked-key-7");
    expect(denied.status).toBe(403);
    expect(seenFor("leaked-key-7")).toBe(0);
    const unrouted = await get(`${envoy.url}/elsewhere`);
    expect(unrouted.status).toBe(200);
    expect(seen.at(-1)?.path).toBe("/elsewhere");
  });

  it("refuses a routed request without its key, and the origin never sees it", async () => {
    const before = seen.length;
    const missing = await get(`${envoy.url}/api/items`);
    expect([missing.status, JSON.parse(missing.body).detail]).toEqual([400, expect.stringContaining("x-api-key")]);
    expect(seen.length).toBe(before);
  });

  it("decides the original method: a method outside the route's is no match, a bad one is a 400 naming the shape", async () => {
    const post = await ask(spillway.port, "/v1/forward-auth/envoy/api/items", { method: "POST", headers: { "x-api-key": "m1", "x-forwarded-for": "192.0.2.1" } });
    expect([post.status, post.headers["spillway-route"]]).toEqual([200, "routes.0"]);
    const bad = await rawExchange(spillway.port, "GE[T /v1/forward-auth/envoy/api/items HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
    expect(bad.split("\r\n")[0]).toMatch(/^HTTP\/1.1 400/); // node:http refuses it before Spillway: never admitted
  });

  it("gives bad input the gateway's own 400s, naming the field", async () => {
    const cases: [string, string][] = [
      ["/v1/forward-auth/envoy", "must be an origin-form URI"],
      ["/v1/forward-auth/envoy?x=1", "the path after /v1/forward-auth/envoy"],
      ["/v1/forward-auth/envoy/api/a%2Fb", 'encoded "/"'],
    ];
    for (const [path, detail] of cases) {
      const answer = await ask(spillway.port, path, { headers: { "x-api-key": "b1" } });
      expect([answer.status, JSON.parse(answer.body).detail]).toEqual([400, expect.stringContaining(detail)]);
    }
  });

  it("refuses a check from an address trustProxy does not list, naming the setting", async () => {
    const answer = await ask(spillway.port, "/v1/forward-auth/envoy/api/items", { headers: { "x-api-key": "k" }, localAddress: "127.0.0.2" });
    expect([answer.status, JSON.parse(answer.body).detail]).toEqual([403, expect.stringContaining("127.0.0.2 is not in trustProxy")]);
  });
});
