import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { overridesFor } from "../../src/overrides/overrides.js";
import { MAX_OVERRIDES_PER_POLICY } from "../../src/overrides/parse.js";
import { type RunningServer, startServer } from "../../src/node/serve/server.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// Runtime overrides in Redis: set through one server, applied by a second one sharing its
// Redis within overridesTtl; the per-policy cap and the list's pages, in real Redis.

const TOKEN = "overrides-token";
const TTL_MS = 300;
const config = parseConfig({
  overridesTtl: TTL_MS,
  policies: [{ name: "per-key", algorithm: "fixed-window", limit: 2, period: "1h" }],
  overrides: [{ policy: "per-key", key: "cfg-*", limit: 3 }],
  // Routes keyed by the address and by a composite key: an override's `source` must be one a route of its policy reads.
  origin: "https://origin.test",
  routes: [
    { match: { path: "/by-ip/*" }, key: "ip", policies: ["per-key"] },
    { match: { path: "/combo/*" }, key: ["header:x-api-key", "ip/56"], policies: ["per-key"] },
  ],
});
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let redis: RedisServer;
const stores: RedisStore[] = [];
const servers: RunningServer[] = [];

/** A server as `spillway serve --redis` wires it: its own Redis client and its own overrides cache. */
async function serve(): Promise<RunningServer> {
  const store = new RedisStore({ url: redis.url, timeoutMs: 500, log: () => {} });
  await store.ready();
  stores.push(store);
  const server = await startServer({ config, limiter: store, port: 0, token: TOKEN, overrides: overridesFor(config, store) });
  servers.push(server);
  return server;
}

beforeAll(async () => {
  redis = await startRedis();
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.close()));
  await redis?.stop();
});

const call = (server: RunningServer, method: string, path: string, body?: unknown) =>
  fetch(`${server.url}${path}`, { method, headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: body === undefined ? undefined : JSON.stringify(body) });
const policyOf = async (server: RunningServer, key: string) => {
  const response = await call(server, "POST", "/v1/check", { key, policy: "per-key" });
  await response.text();
  return response.headers.get("ratelimit-policy");
};

describe("runtime overrides in Redis", () => {
  it("set through one server, apply on a second sharing its Redis within overridesTtl", async () => {
    const [first, second] = [await serve(), await serve()];
    const key = `acme-${crypto.randomUUID()}`;
    expect(await policyOf(second, key)).toBe('"per-key";q=2;w=3600'); // read and cached before the change
    const put = await call(first, "PUT", "/v1/overrides", { policy: "per-key", key: "acme-*", limit: 6000, period: "1m" });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ policy: "per-key", key: "acme-*", limit: 6000, period: 60_000 });
    expect(await policyOf(first, key)).toBe('"per-key";q=6000;w=60');
    await sleep(TTL_MS);
    expect(await policyOf(second, key)).toBe('"per-key";q=6000;w=60');
    // An exact key beats the wildcard; a config override still applies beside runtime ones.
    await call(second, "PUT", "/v1/overrides", { policy: "per-key", key, limit: 1 });
    await sleep(TTL_MS);
    expect(await policyOf(first, key)).toBe('"per-key";q=1;w=3600');
    expect(await policyOf(first, `cfg-${crypto.randomUUID()}`)).toBe('"per-key";q=3;w=3600');

    expect(await (await call(first, "DELETE", "/v1/overrides", { policy: "per-key", key })).json()).toEqual({ deleted: true });
    expect(await (await call(first, "DELETE", "/v1/overrides", { policy: "per-key", key })).json()).toEqual({ deleted: false });
    await sleep(TTL_MS);
    expect(await policyOf(second, key)).toBe('"per-key";q=6000;w=60');
  });

  it("lists about 1,000 a page with a cursor (HSCAN pages: each override once, in hash order)", async () => {
    const server = servers[0] ?? (await serve());
    const table = stores[0]!.overrides;
    const keys = Array.from({ length: 2500 }, (_, i) => `page-${String(i).padStart(4, "0")}`);
    await Promise.all(keys.map((key) => table.put({ policy: "per-key", key, limit: 5 })));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const response = await call(server, "GET", `/v1/overrides?policy=per-key${cursor ? `&cursor=${cursor}` : ""}`);
      const page = (await response.json()) as { overrides: { key: string }[]; cursor?: string };
      seen.push(...page.overrides.map((one) => one.key));
      cursor = page.cursor;
      pages++;
    } while (cursor);
    expect(pages).toBeGreaterThanOrEqual(2);
    expect(seen.filter((key) => key.startsWith("page-")).sort()).toEqual(keys);
    for (const bad of ["%%%", "bm90LWEtbnVtYmVy"]) expect((await call(server, "GET", `/v1/overrides?policy=per-key&cursor=${bad}`)).status, bad).toBe(400);
  });

  it(`refuses the ${MAX_OVERRIDES_PER_POLICY + 1}st override of a policy, and still replaces existing ones`, async () => {
    if (stores.length === 0) await serve();
    const client = stores[0]!.client;
    const hash = "spillway:{overrides:full}:~overrides";
    const full = parseConfig({ overridesTtl: TTL_MS, policies: [{ name: "full", algorithm: "fixed-window", limit: 2, period: "1h" }] });
    const fullServer = await startServer({ config: full, limiter: stores[0]!, port: 0, token: TOKEN, overrides: overridesFor(full, stores[0]!) });
    servers.push(fullServer);
    // Filled straight into the hash: 100,000 PUTs would only test the HTTP layer's speed.
    for (let start = 0; start < MAX_OVERRIDES_PER_POLICY; start += 10_000) {
      const pipeline = client.pipeline();
      for (let i = start; i < start + 10_000; i++) pipeline.hset(hash, `k${i}`, JSON.stringify({ policy: "full", key: `k${i}`, limit: 3 }));
      await pipeline.exec();
    }
    const refused = await call(fullServer, "PUT", "/v1/overrides", { policy: "full", key: "one-more", limit: 3 });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ field: "key", detail: expect.stringMatching(/already has 100000 overrides/) });
    expect((await call(fullServer, "PUT", "/v1/overrides", { policy: "full", key: "k7", limit: 4 })).status).toBe(200);
  });

  it("scopes overrides by key source: one key, three sources, three overrides; a source never borrows another's", async () => {
    const server = servers[0] ?? (await serve());
    // Two parts joined by "|": a value of the composite source, and (one value) of the others.
    const key = `127.0.0.${Math.floor(Math.random() * 250)}-${crypto.randomUUID()}|p`;
    const put = (body: Record<string, unknown>) => call(server, "PUT", "/v1/overrides", { policy: "per-key", key, ...body });
    expect(await (await put({ source: "ip", limit: 1000 })).json()).toEqual({ policy: "per-key", key, source: "ip", limit: 1000 });
    expect(await (await put({ source: ["header:X-Api-Key", "ip/56"], limit: 30 })).json()).toEqual({ policy: "per-key", key, source: ["header:x-api-key", "ip"], limit: 30 });
    expect((await put({ limit: 7 })).status).toBe(200);
    // /v1/check keys have no source: only the source-less override applies to them.
    expect(await policyOf(server, key)).toBe('"per-key";q=7;w=3600');
    const second = await serve();
    const overrides = overridesFor(config, stores[stores.length - 1]!);
    await overrides.resolve([config.catalog.get("per-key")!], key);
    expect(overrides.find("per-key", key, "ip")?.limit).toBe(1000);
    expect(overrides.find("per-key", key, "header:x-api-key")).toBeUndefined();
    expect(overrides.find("per-key", key, "[header:x-api-key|ip]")?.limit).toBe(30);
    expect(overrides.find("per-key", key)?.limit).toBe(7);
    expect(await policyOf(second, key)).toBe('"per-key";q=7;w=3600');
    // Deleting one source's override leaves the others.
    expect(await (await call(server, "DELETE", "/v1/overrides", { policy: "per-key", key, source: "ip" })).json()).toEqual({ deleted: true });
    expect(await (await call(server, "DELETE", "/v1/overrides", { policy: "per-key", key, source: "ip" })).json()).toEqual({ deleted: false });
    const listed: { key: string; source?: unknown }[] = [];
    let cursor: string | undefined;
    do {
      const page = (await (await call(server, "GET", `/v1/overrides?policy=per-key${cursor ? `&cursor=${cursor}` : ""}`)).json()) as { overrides: { key: string }[]; cursor?: string };
      listed.push(...page.overrides.filter((one) => one.key === key));
      cursor = page.cursor;
    } while (cursor);
    expect(listed.map((one) => one.source ?? null).sort()).toEqual([["header:x-api-key", "ip"], null]);
  });

  it("GET keeps answering over a row stored with an expiresAt past any date (as 9007199254740991 once was)", async () => {
    const server = servers[0] ?? (await serve());
    const client = stores[0]!.client;
    await client.hset("spillway:{overrides:per-key}:~overrides", "far-future", JSON.stringify({ policy: "per-key", key: "far-future", limit: 4, expiresAtMs: 9007199254740991 }));
    await client.hset("spillway:{overrides:per-key}:~overrides", "not-json", "{");
    const listed: { key: string }[] = [];
    let cursor: string | undefined;
    do {
      const response = await call(server, "GET", `/v1/overrides?policy=per-key${cursor ? `&cursor=${cursor}` : ""}`);
      expect(response.status).toBe(200);
      const page = (await response.json()) as { overrides: { key: string }[]; cursor?: string };
      listed.push(...page.overrides);
      cursor = page.cursor;
    } while (cursor);
    expect(listed).toContainEqual({ policy: "per-key", key: "far-future", limit: 4 });
    const refused = await call(server, "PUT", "/v1/overrides", { policy: "per-key", key: "far-future", limit: 4, expiresAt: 9007199254740991 });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({ field: "expiresAt" });
    expect(await (await call(server, "DELETE", "/v1/overrides", { policy: "per-key", key: "far-future" })).json()).toEqual({ deleted: true });
  });
});
