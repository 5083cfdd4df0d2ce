import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { createWorker } from "../../src/worker/index.js";
import { uniqueIp, uniqueUser } from "./gateway-helpers.js";

// /v1/forward-auth on the Worker (createWorker, deciding in the LIMITER Durable Objects): a
// proxy elsewhere asks the Worker. On Cloudflare the proxy's address is CF-Connecting-IP, and
// Cloudflare appends it to the X-Forwarded-For the proxy sent.
const PROXY_IP = "192.0.2.10";
const worker = createWorker({
  origin: "https://origin.test",
  trustProxy: [PROXY_IP],
  policies: [
    { name: "five", algorithm: "fixed-window", limit: 5, period: "1h" },
    { name: "one", algorithm: "fixed-window", limit: 1, period: "1h" },
  ],
  routes: [
    { match: { path: "/api/*" }, key: "header:x-api-key", policies: ["five"] },
    { match: { path: "/by-ip/*" }, key: "ip", policies: ["one"] },
  ],
  deny: { keys: [{ key: "leaked", source: "header:x-api-key" }] },
});

let originCalls = 0;
const realFetch = globalThis.fetch;
beforeAll(() => {
  globalThis.fetch = async (input: RequestInfo | URL, init?: RequestInit) => {
    originCalls++;
    return realFetch(input, init);
  };
});
afterAll(() => {
  globalThis.fetch = realFetch;
});

async function ask(path: string, fields: Record<string, string>, from: string | null = PROXY_IP, method = "GET") {
  const headers = new Headers(fields);
  if (from !== null) headers.set("cf-connecting-ip", from);
  const ctx = createExecutionContext();
  const response = await worker.fetch(new Request(`https://spillway.example.workers.dev${path}`, { method, headers }), env as never, ctx);
  await waitOnExecutionContext(ctx);
  return { status: response.status, headers: response.headers, body: await response.text() };
}
const traefik = (uri: string, extra: Record<string, string> = {}) => ({ "x-forwarded-method": "GET", "x-forwarded-uri": uri, "x-forwarded-host": "api.example.com", "x-forwarded-for": `203.0.113.9, ${PROXY_IP}`, ...extra });

describe("the Worker's /v1/forward-auth", () => {
  it("admits exactly the limit of a burst, 429 with Retry-After and the RateLimit fields past it; never asks the origin", async () => {
    const key = uniqueUser();
    const answers = await Promise.all(Array.from({ length: 20 }, () => ask("/v1/forward-auth", traefik("/api/items?page=2", { "x-api-key": key }))));
    const admitted = answers.filter((answer) => answer.status === 200);
    expect(admitted).toHaveLength(5);
    expect(admitted.every((answer) => /^"five";r=\d;t=\d+$/.test(answer.headers.get("ratelimit") ?? "") && answer.headers.get("spillway-route") === "routes.0")).toBe(true);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(refused).toHaveLength(15);
    expect(Number(refused[0]!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(refused[0]!.headers.get("ratelimit-policy")).toBe('"five";q=5;w=3600');
    expect(JSON.parse(refused[0]!.body)).toMatchObject({ status: 429, "violated-policies": ["five"] });
    expect(originCalls).toBe(0);
  });

  it("keys by the client the proxy forwards, past Cloudflare's own append; denies by key source; turns a refusal into nginx's 401", async () => {
    const client = uniqueIp();
    const nginx = { "x-original-method": "GET", "x-original-uri": "/by-ip/a", "x-forwarded-for": `${client}, ${PROXY_IP}` };
    expect((await ask("/v1/forward-auth", nginx)).status).toBe(200);
    const limited = await ask("/v1/forward-auth?deny_status=401", nginx);
    expect([limited.status, limited.headers.get("spillway-status")]).toEqual([401, "429"]);
    expect((await ask("/v1/forward-auth", { ...nginx, "x-forwarded-for": `${uniqueIp()}, ${PROXY_IP}` })).status).toBe(200);
    expect((await ask("/v1/forward-auth", traefik("/api/x", { "x-api-key": "leaked" }))).status).toBe(403);
  });

  it("answers Envoy's HTTP shape: the original method, the path after /v1/forward-auth/envoy", async () => {
    const key = uniqueUser();
    const first = await ask("/v1/forward-auth/envoy/api/items?x=1", { "x-api-key": key, "x-forwarded-for": "203.0.113.9" }, PROXY_IP, "POST");
    expect([first.status, first.headers.get("ratelimit")]).toEqual([200, expect.stringMatching(/^"five";r=4;/)]);
    const bare = await ask("/v1/forward-auth/envoy", { "x-api-key": key });
    expect([bare.status, JSON.parse(bare.body).detail]).toEqual([400, expect.stringContaining("origin-form URI")]);
  });

  it("refuses forwarded fields from a CF-Connecting-IP trustProxy does not list, or none, naming the setting", async () => {
    const other = await ask("/v1/forward-auth", traefik("/api/x", { "x-api-key": uniqueUser() }), "198.51.100.1");
    expect([other.status, JSON.parse(other.body).detail]).toEqual([403, expect.stringContaining("198.51.100.1 is not in trustProxy")]);
    const none = await ask("/v1/forward-auth", traefik("/api/x", { "x-api-key": uniqueUser() }), null);
    expect([none.status, JSON.parse(none.body).detail]).toEqual([403, expect.stringContaining("this address is not in trustProxy")]);
  });

  it("gives bad input the gateway's own 400s", async () => {
    const missing = await ask("/v1/forward-auth", { "x-forwarded-uri": "/api/x" });
    expect([missing.status, JSON.parse(missing.body).detail]).toEqual([400, expect.stringContaining("neither X-Forwarded-Method nor X-Original-Method")]);
    const encoded = await ask("/v1/forward-auth", traefik("/api/a%2Fb", { "x-api-key": uniqueUser() }));
    expect(encoded.status).toBe(400);
  });
});
