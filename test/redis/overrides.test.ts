import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "../../src/config.js";
import { overridesFor } from "../../src/overrides/overrides.js";
import { MAX_OVERRIDES_PER_POLICY } from "../../src/overrides/parse.js";
import { type RunningServer, startServer } from "../../src/node/server.js";
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

  it("lists 1,000 a page with a cursor, in key order", async () => {
    const server = servers[0] ?? (await serve());
    const table = stores[0]!.overrides;
    const keys = Array.from({ length: 1001 }, (_, i) => `page-${String(i).padStart(4, "0")}`);
    await Promise.all(keys.map((key) => table.put({ policy: "per-key", key, limit: 5 })));
    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const response = await call(server, "GET", `/v1/overrides?policy=per-key${cursor ? `&cursor=${cursor}` : ""}`);
      const page = (await response.json()) as { overrides: { key: string }[]; cursor?: string };
      expect(page.overrides.length).toBeLessThanOrEqual(1000);
      seen.push(...page.overrides.map((one) => one.key));
      cursor = page.cursor;
      pages++;
    } while (cursor);
    expect(pages).toBe(2);
    expect(seen.filter((key) => key.startsWith("page-"))).toEqual(keys);
    const bad = await call(server, "GET", "/v1/overrides?policy=per-key&cursor=%%%");
    expect(bad.status).toBe(400);
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
});
