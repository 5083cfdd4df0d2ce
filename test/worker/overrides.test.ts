import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createWorker } from "../../src/worker/index.js";
import { checkWith, uniqueKey } from "./helpers.js";

// Runtime overrides on the Worker: they live in the OVERRIDES Durable Object, so one set
// through one Worker instance (its own isolate-level cache, as another isolate has) applies
// in another within overridesTtl; and the same over RPC.

const TTL_MS = 300;
const config = {
  overridesTtl: TTL_MS,
  policies: [
    { name: "ov-window", algorithm: "fixed-window", limit: 2, period: "1h" },
    { name: "ov-gcra", algorithm: "gcra", limit: 2, period: "1h" },
  ],
  // A route keyed by a composite key: an override's `source` must be one a route of its policy reads.
  origin: "https://origin.test",
  routes: [{ match: { path: "/combo/*" }, key: ["header:x-user", "ip/48"], policies: ["ov-window"] }],
};
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

type Fetcher = { fetch(request: Request, env: never, ctx: ExecutionContext): Promise<Response> };
async function call(worker: Fetcher, method: string, path: string, body?: unknown, workerEnv: unknown = env): Promise<Response> {
  const ctx = createExecutionContext();
  const init: RequestInit = { method, headers: { authorization: "Bearer test-token", "content-type": "application/json" } };
  if (body !== undefined) init.body = JSON.stringify(body);
  const response = await worker.fetch(new Request(`http://spillway.test${path}`, init), workerEnv as never, ctx);
  await waitOnExecutionContext(ctx);
  return response;
}
const policyOf = async (worker: Fetcher, key: string, policy = "ov-window") => (await checkWith(worker, env, key, policy)).headers.get("ratelimit-policy");

describe("runtime overrides on the Worker", () => {
  it("set through one Worker instance, apply in another within overridesTtl, and go away when deleted", async () => {
    const setter = createWorker(config);
    const other = createWorker(config);
    const key = uniqueKey();
    // The other instance has read (and cached) the table before the change.
    expect(await policyOf(other, key)).toBe('"ov-window";q=2;w=3600');
    const put = await call(setter, "PUT", "/v1/overrides", { policy: "ov-window", key, limit: 5 });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({ policy: "ov-window", key, limit: 5 });
    // The setter's own isolate applies it at once; the other within the TTL.
    expect(await policyOf(setter, key)).toBe('"ov-window";q=5;w=3600');
    await sleep(TTL_MS);
    expect(await policyOf(other, key)).toBe('"ov-window";q=5;w=3600');
    const body = (await (await checkWith(other, env, key, "ov-window")).json()) as { limit: number };
    expect(body.limit).toBe(5);

    const listed = (await (await call(other, "GET", "/v1/overrides?policy=ov-window")).json()) as { overrides: { key: string }[] };
    expect(listed.overrides.map((one) => one.key)).toContain(key);
    const deleted = await call(other, "DELETE", "/v1/overrides", { policy: "ov-window", key });
    expect(await deleted.json()).toEqual({ deleted: true });
    await sleep(TTL_MS);
    expect(await policyOf(setter, key)).toBe('"ov-window";q=2;w=3600');
  });

  it("a wildcard set at runtime applies by longest prefix; burst is gcra's capacity", async () => {
    const worker = createWorker(config);
    const prefix = `${uniqueKey()}-`;
    await call(worker, "PUT", "/v1/overrides", { policy: "ov-gcra", key: `${prefix}*`, limit: 10, burst: 7 });
    const decision = (await (await checkWith(worker, env, `${prefix}a`, "ov-gcra")).json()) as { limit: number; remaining: number };
    expect(decision).toMatchObject({ limit: 7, remaining: 6 });
  });

  it("refuses a bad override with a 400 naming the field, an unknown policy with a 404", async () => {
    const worker = createWorker(config);
    const cases: Array<[unknown, number, string]> = [
      [{ policy: "ov-window", key: "k", limit: -1 }, 400, "limit"],
      [{ policy: "ov-window", key: "k", burst: 3 }, 400, "burst"],
      [{ policy: "ov-window", key: "k" }, 400, "body"],
      [{ policy: "ov-window", key: "", limit: 3 }, 400, "key"],
      [{ policy: "ov-window", key: "k", limit: 3, period: "soon" }, 400, "period"],
      [{ policy: "ov-window", key: "k", limit: 3, expiresAt: "2001-01-01T00:00:00Z" }, 400, "expiresAt"],
      [{ policy: "ov-window", key: "k", limit: 3, algorithm: "gcra" }, 400, "algorithm"],
      [{ policy: "ov-window", key: "k", limit: 3, expiresAt: 9007199254740991 }, 400, "expiresAt"],
      [{ policy: "ov-window", key: "k", limit: 3, expiresAt: "2099-02-31" }, 400, "expiresAt"],
      [{ policy: "ov-window", key: "k", limit: 3, source: "ipv4" }, 400, "source"],
      [{ policy: "nope", key: "k", limit: 3 }, 404, "policy"],
    ];
    for (const [body, status, field] of cases) {
      const response = await call(worker, "PUT", "/v1/overrides", body);
      expect(response.status, JSON.stringify(body)).toBe(status);
      expect(((await response.json()) as { field: string }).field).toBe(field);
    }
    expect((await call(worker, "GET", "/v1/overrides")).status).toBe(400);
    const unknown = (await (await call(worker, "PUT", "/v1/overrides", { policy: "nope", key: "k", limit: 3 })).json()) as { detail: string };
    expect(unknown.detail).toMatch(/\(it has "ov-window", "ov-gcra"/);
    expect((await worker.fetch(new Request("http://spillway.test/v1/overrides?policy=ov-window"), env as never, createExecutionContext())).status).toBe(401);
  });

  it("without an OVERRIDES binding, config overrides apply and /v1/overrides answers 503", async () => {
    const worker = createWorker({ ...config, overrides: [{ policy: "ov-window", key: "cfg-*", limit: 9 }] });
    const bare = { ...env, OVERRIDES: undefined };
    const refused = await call(worker, "PUT", "/v1/overrides", { policy: "ov-window", key: "k", limit: 3 }, bare);
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { detail: string }).detail).toMatch(/OVERRIDES Durable Object binding/);
    const ctx = createExecutionContext();
    const request = new Request("http://spillway.test/v1/check", { method: "POST", headers: { authorization: "Bearer test-token" }, body: JSON.stringify({ key: `cfg-${uniqueKey()}`, policy: "ov-window" }) });
    const response = await worker.fetch(request, bare as never, ctx);
    await waitOnExecutionContext(ctx);
    expect(response.headers.get("ratelimit-policy")).toBe('"ov-window";q=9;w=3600');
  });

  it("an override with a source applies only to keys read from that source; DELETE names the source", async () => {
    const worker = createWorker(config);
    // A composite key's two parts.
    const key = `${uniqueKey()}|2001:db8::/48`;
    const put = await call(worker, "PUT", "/v1/overrides", { policy: "ov-window", key, source: ["header:X-User", "ip/48"], limit: 6 });
    expect(await put.json()).toEqual({ policy: "ov-window", key, source: ["header:x-user", "ip"], limit: 6 });
    expect(await policyOf(worker, key)).toBe('"ov-window";q=2;w=3600'); // /v1/check keys have no source
    expect(await (await call(worker, "DELETE", "/v1/overrides", { policy: "ov-window", key })).json()).toEqual({ deleted: false });
    expect(await (await call(worker, "DELETE", "/v1/overrides", { policy: "ov-window", key, source: ["header:x-user", "ip"] })).json()).toEqual({ deleted: true });
  });

  it("over RPC: putOverride, listOverrides, deleteOverride, and errors that name the field", async () => {
    const key = uniqueKey();
    // Settle the RPC promise with then(): touching any other property of it would pipeline a new call.
    const messageOf = (call: Promise<unknown>) => call.then(() => "resolved", (error: Error) => error.message);
    // The demo's config has no route: an override for a route's key source could never apply.
    expect(await messageOf(exports.SpillwayRpc.putOverride({ policy: "demo", key, source: "ip", limit: 8 }))).toMatch(/^source: no route that counts "demo" reads keys from "ip"/);
    expect(await exports.SpillwayRpc.putOverride({ policy: "demo", key, limit: 7 })).toEqual({ policy: "demo", key, limit: 7 });
    const decision = await exports.SpillwayRpc.check({ key, policy: "demo" });
    expect(decision.limit).toBe(7);
    const listed = await exports.SpillwayRpc.listOverrides({ policy: "demo" });
    expect(listed.overrides).toContainEqual({ policy: "demo", key, limit: 7 });
    expect(await exports.SpillwayRpc.deleteOverride({ policy: "demo", key })).toEqual({ deleted: true });
    expect(await messageOf(exports.SpillwayRpc.putOverride({ policy: "demo", key, limit: 0 }))).toMatch(/^limit: /);
    expect(await messageOf(exports.SpillwayRpc.deleteOverride({ policy: "demo" }))).toMatch(/^key: /);
    expect(await messageOf(exports.SpillwayRpc.listOverrides(null))).toMatch(/^request: /);
  });
});
