import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { bindingLimiter } from "../../src/client/index.js";
import { post, uniqueKey } from "./helpers.js";

// Credits and calendar windows on the Worker: the HTTP API and the RPC binding, each key its
// own Durable Object (the conformance table holds the object's decisions to the core's).
const rpc = exports.SpillwayRpc;
const prepaid = { name: "prepaid", algorithm: "credits" as const, limit: 10 };

describe("credits on the Worker", () => {
  it("POST /v1/credits tops up a balance that /v1/check spends", async () => {
    const key = uniqueKey("credits");
    const topUp = await post("/v1/credits", { key, policy: prepaid, add: 5 });
    expect(topUp.status).toBe(200);
    expect(await topUp.json()).toEqual({ key, policy: "prepaid", remaining: 15 });
    expect(await (await post("/v1/check", { key, policy: prepaid, cost: 15 })).json()).toMatchObject({ allowed: true, remaining: 0 });
    const refused = await post("/v1/check", { key, policy: prepaid });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toMatchObject({ retryAfterMs: null });
    expect(await (await post("/v1/credits", { key, policy: prepaid, set: 3 })).json()).toMatchObject({ remaining: 3 });
  });

  it("bad changes are a 400 naming the field", async () => {
    for (const [body, field] of [
      [{ add: -1 }, "add"],
      [{ add: 2.5 }, "add"],
      [{ add: 2e15 }, "add"],
      [{ policy: { name: "g", limit: 1, period: "1s" }, add: 1 }, "policy"],
    ] as const) {
      const response = await post("/v1/credits", { key: "k", policy: prepaid, ...body });
      expect(response.status).toBe(400);
      expect(await response.json()).toMatchObject({ field });
    }
  });

  it("RPC credits, and the binding client's", async () => {
    const key = uniqueKey("credits-rpc");
    expect(await rpc.credits({ key, policy: prepaid, add: 1 })).toEqual({ key, policy: "prepaid", remaining: 11 });
    const messageOf = (call: Promise<unknown>) => call.then(() => "resolved", (error: Error) => error.message);
    expect(await messageOf(rpc.credits({ key, policy: "per-minute", add: 1 }))).toMatch(/^policy: "per-minute" is gcra/);
    expect(await messageOf(rpc.credits({ key, policy: prepaid, add: -1 }))).toMatch(/^add: must be an integer/);
    const limiter = bindingLimiter(rpc as never);
    expect(await limiter.credits(key, prepaid, { set: 4 })).toEqual({ remaining: 4 });
    expect(await limiter.check(key, prepaid, { cost: 5, mode: "reject", maxWaitMs: 0 })).toMatchObject({ allowed: false });
  });

  it("a calendar window answers to its boundary in its zone", async () => {
    const policy = { name: "daily", algorithm: "fixed-window", limit: 2, calendar: "day", timezone: "Asia/Kolkata" };
    const sentMs = Date.now();
    const response = await post("/v1/check", { key: uniqueKey("daily"), policy });
    const decision = (await response.json()) as { resetMs: number; remaining: number };
    expect(decision.remaining).toBe(1);
    // Kolkata's midnight is 18:30 UTC.
    const boundary = new Date(sentMs + decision.resetMs);
    const nearest = Math.round((boundary.getUTCHours() * 60 + boundary.getUTCMinutes() + boundary.getUTCSeconds() / 60) / 30) * 30;
    expect(nearest % 1440).toBe(18 * 60 + 30);
    expect(response.headers.get("ratelimit-policy")).toBe('"daily";q=2');
  });

  it("an inline policy that takes a configured policy's name with another shape is a 400 naming the field, over HTTP and RPC", async () => {
    const key = uniqueKey("shape");
    // "demo" is a fixed window of 3 per 10 s in the Worker's config.
    for (let i = 0; i < 3; i++) expect((await post("/v1/check", { key, policy: "demo" })).status).toBe(200);
    const refill = await post("/v1/check", { key, policy: { name: "demo", algorithm: "credits", limit: 100 } });
    expect(refill.status).toBe(400);
    expect(await refill.json()).toMatchObject({ field: "policy.algorithm" });
    const wider = await post("/v1/check", { key, policy: { name: "demo", algorithm: "fixed-window", limit: 300, period: "10s" } });
    expect(await wider.json()).toMatchObject({ field: "policy.limit" });
    expect((await post("/v1/check", { key, policy: "demo" })).status).toBe(429);
    const messageOf = (call: Promise<unknown>) => call.then(() => "resolved", (error: Error) => error.message);
    expect(await messageOf(rpc.check({ key, policy: { name: "demo", algorithm: "gcra", limit: 3, period: "10s" } }))).toMatch(/^policy\.algorithm: must be "fixed-window", as the configured policy "demo" has it/);
    expect(await messageOf(rpc.credits({ key, policy: { name: "demo", algorithm: "credits", limit: 3 }, add: 1 }))).toMatch(/^policy\.algorithm: /);
  });

  it("an add of 0 reads: a balance read under another limit is kept", async () => {
    const key = uniqueKey("read");
    const small = { name: "wallet", algorithm: "credits", limit: 100 };
    expect(await (await post("/v1/credits", { key, policy: small, set: 5000 })).json()).toMatchObject({ remaining: 5000 });
    expect(await (await post("/v1/credits", { key, policy: { ...small, limit: 5000 }, add: 0 })).json()).toMatchObject({ remaining: 5000 });
    expect(await (await post("/v1/credits", { key, policy: small, add: 0 })).json()).toMatchObject({ remaining: 5000 });
  });

  it("a field set twice is a 400 naming it", async () => {
    const twice = await post("/v1/credits", '{"key":"k","policy":{"name":"prepaid","algorithm":"credits","limit":10},"set":10,"set":1000000}');
    expect(twice.status).toBe(400);
    expect(await twice.json()).toMatchObject({ field: "set" });
    const check = await post("/v1/check", '{"key":"k","policy":"demo","cost":1,"cost":0}');
    expect(await check.json()).toMatchObject({ status: 400, field: "cost" });
  });

  it("a balance holds at most 1e15: an add past it is refused, over HTTP and RPC, and changes nothing", async () => {
    const key = uniqueKey("cap");
    expect(await (await post("/v1/credits", { key, policy: prepaid, set: 1e15 })).json()).toMatchObject({ remaining: 1e15 });
    const past = await post("/v1/credits", { key, policy: prepaid, add: 1 });
    expect(past.status).toBe(400);
    expect(await past.json()).toMatchObject({ field: "add" });
    const messageOf = (call: Promise<unknown>) => call.then(() => "resolved", (error: Error) => error.message);
    expect(await messageOf(rpc.credits({ key, policy: prepaid, add: 1 }))).toMatch(/^add: would take the balance to 1000000000000001/);
    expect((await post("/v1/credits", { key, policy: prepaid, set: 1e15 + 1 })).status).toBe(400);
    expect(await (await post("/v1/check", { key, policy: prepaid })).json()).toMatchObject({ allowed: true, remaining: 1e15 - 1 });
  });
});
