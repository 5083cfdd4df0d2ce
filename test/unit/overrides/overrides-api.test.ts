import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { createApp } from "../../../src/http/app.js";
import { MAX_EXPIRES_AHEAD_MS } from "../../../src/overrides/parse.js";
import { SpillwayService } from "../../../src/service/service.js";
import { MemoryStore } from "../../../src/stores/memory.js";

// /v1/overrides on the memory store: what a PUT, DELETE and GET refuse (400 naming the field,
// 404 listing the config's policies), and what a stored row the API once let in answers.

const config = parseConfig({
  policies: [
    { name: "per-key", algorithm: "fixed-window", limit: 2, period: "1h" },
    { name: "smooth", algorithm: "gcra", limit: 600, period: "1m" },
  ],
  // A route keyed by the address: an override's `source` must be one a route of its policy reads.
  origin: "https://origin.test",
  routes: [{ match: { path: "/by-ip/*" }, key: "ip/64", policies: ["per-key"] }],
});

function app(store = new MemoryStore()) {
  const service = new SpillwayService(store, config);
  const served = createApp({ service, tokenOf: () => "t" });
  const send = async (method: string, path: string, body?: string | object) => {
    const response = await served.request(path, { method, headers: { authorization: "Bearer t", "content-type": "application/json" }, ...(body === undefined ? {} : { body: typeof body === "string" ? body : JSON.stringify(body) }) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  return { store, send };
}

describe("/v1/overrides input", () => {
  it.each([
    ["an expiresAt past any date (once a 500, and stored)", { expiresAt: 9007199254740991 }, "expiresAt", /at most 100 years ahead/],
    ["an expiresAt more than 100 years ahead", { expiresAt: Date.now() + MAX_EXPIRES_AHEAD_MS + 60_000 }, "expiresAt", /at most 100 years ahead/],
    ["the 31st of February", { expiresAt: "2099-02-31" }, "expiresAt", /must be a real date/],
    ["hour 25", { expiresAt: "2099-01-01T25:00:00Z" }, "expiresAt", /must be a real date/],
    ["a date Date.parse reads but ISO 8601 does not write", { expiresAt: "2099-01-01 and then some" }, "expiresAt", /ISO 8601/],
    ["a source that is no key source", { source: "header:" }, "source", /header name/],
    ["a composite source naming one part twice", { source: ["ip", "ip"] }, "source", /twice/],
  ])("PUT refuses %s with a 400 naming the field", async (_what, more, field, detail) => {
    const { send } = app();
    const answer = await send("PUT", "/v1/overrides", { policy: "per-key", key: "k", limit: 3, ...more });
    expect(answer.status).toBe(400);
    expect(answer.body).toMatchObject({ field, detail: expect.stringMatching(detail) });
    expect((await send("GET", "/v1/overrides?policy=per-key")).body).toEqual({ overrides: [] }); // nothing stored
  });

  it("accepts a real date, a leap day, and epoch ms within the bound", async () => {
    const { send } = app();
    expect(await send("PUT", "/v1/overrides", { policy: "per-key", key: "a", limit: 3, expiresAt: "2096-02-29" })).toMatchObject({ status: 200, body: { expiresAt: "2096-02-29T00:00:00.000Z" } });
    expect((await send("PUT", "/v1/overrides", { policy: "per-key", key: "b", limit: 3, expiresAt: "2099-12-31T23:59:59+01:00" })).status).toBe(200);
    expect((await send("PUT", "/v1/overrides", { policy: "per-key", key: "c", limit: 3, expiresAt: Date.now() + 86_400_000 })).status).toBe(200);
  });

  it("refuses a field given twice in a PUT or DELETE body, naming it (JSON.parse would keep the last)", async () => {
    const { send } = app();
    const put = await send("PUT", "/v1/overrides", '{ "policy": "per-key", "key": "k", "limit": 3, "limit": 3000000 }');
    expect(put).toMatchObject({ status: 400, body: { field: "limit", detail: expect.stringMatching(/appears twice/) } });
    const deleted = await send("DELETE", "/v1/overrides", '{ "policy": "per-key", "key": "a", "key": "b" }');
    expect(deleted).toMatchObject({ status: 400, body: { field: "key" } });
  });

  it("an unknown policy is a 404 that lists the config's policies", async () => {
    const { send } = app();
    for (const [method, path, body] of [["PUT", "/v1/overrides", { policy: "nope", key: "k", limit: 1 }], ["DELETE", "/v1/overrides", { policy: "nope", key: "k" }], ["GET", "/v1/overrides?policy=nope", undefined]] as const) {
      const answer = await send(method, path, body);
      expect(answer.status, method).toBe(404);
      expect(answer.body.detail, method).toMatch(/no policy named "nope" in the config \(it has "per-key", "smooth"\)/);
    }
  });

  it("GET keeps answering over a row stored before these bounds (an expiry past any date reads as none)", async () => {
    const { store, send } = app();
    await store.overrides.put({ policy: "per-key", key: "far", limit: 4, expiresAtMs: 9007199254740991 });
    const listed = await send("GET", "/v1/overrides?policy=per-key");
    expect(listed).toEqual({ status: 200, body: { overrides: [{ policy: "per-key", key: "far", limit: 4 }] } });
  });

  it("PUT, GET and DELETE take a source: one key from two sources is two overrides", async () => {
    const { send } = app();
    expect((await send("PUT", "/v1/overrides", { policy: "per-key", key: "127.0.0.1", source: "ip/64", limit: 1000 })).body).toEqual({ policy: "per-key", key: "127.0.0.1", source: "ip", limit: 1000 });
    expect((await send("PUT", "/v1/overrides", { policy: "per-key", key: "127.0.0.1", limit: 5 })).status).toBe(200);
    const check = await send("POST", "/v1/check", { policy: "per-key", key: "127.0.0.1" });
    expect(check.body.limit).toBe(5); // /v1/check keys have no source
    expect((await send("GET", "/v1/overrides?policy=per-key")).body.overrides).toEqual([
      { policy: "per-key", key: "127.0.0.1", source: "ip", limit: 1000 },
      { policy: "per-key", key: "127.0.0.1", limit: 5 },
    ]);
    expect((await send("DELETE", "/v1/overrides", { policy: "per-key", key: "127.0.0.1", source: "ip" })).body).toEqual({ deleted: true });
    expect((await send("GET", "/v1/overrides?policy=per-key")).body.overrides).toEqual([{ policy: "per-key", key: "127.0.0.1", limit: 5 }]);
  });

  it("under a config override with burst, the decision's limit and RateLimit-Policy's q agree (issue 32)", async () => {
    const withBurst = parseConfig({ policies: [{ name: "per-key", algorithm: "gcra", limit: 600, period: "1m" }], overrides: [{ policy: "per-key", key: "acme-*", limit: 6000, burst: 600, period: "1m" }] });
    const served = createApp({ service: new SpillwayService(new MemoryStore(), withBurst), tokenOf: () => "t" });
    const response = await served.request("/v1/check", { method: "POST", headers: { authorization: "Bearer t" }, body: JSON.stringify({ key: "acme-1", policy: "per-key" }) });
    const body = (await response.json()) as { limit: number; remaining: number };
    expect(body).toMatchObject({ limit: 600, remaining: 599 });
    expect(response.headers.get("ratelimit-policy")).toBe('"per-key";q=600;w=6');
    expect(response.headers.get("ratelimit")).toBe('"per-key";r=599;t=1');
  });
});
