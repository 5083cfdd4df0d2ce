import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { parseConfig } from "../../../src/config/config.js";
import { createApi } from "../../../src/http/api.js";
import { rateLimit } from "../../../src/http/middleware.js";
import { SpillwayService } from "../../../src/service/service.js";
import { MemoryStore } from "../../../src/stores/memory.js";

const boxed = { name: "logins", algorithm: "fixed-window", limit: 2, period: "1m", block: "15m" };

describe("block over HTTP", () => {
  it("rateLimit(): the 429 says blocked until when, Retry-After and t count the block down", async () => {
    let nowMs = 1_700_000_000_000;
    const store = new MemoryStore({ clockMs: () => nowMs });
    const app = new Hono();
    app.use("/login", rateLimit({ store, policies: boxed, key: () => "alice", log: () => {} }));
    app.get("/login", (c) => c.text("ok"));
    expect((await app.request("/login")).status).toBe(200);
    expect((await app.request("/login")).status).toBe(200);
    const denied = await app.request("/login");
    expect(denied.status).toBe(429);
    expect(denied.headers.get("retry-after")).toBe("900");
    expect(denied.headers.get("ratelimit")).toBe('"logins";r=0;t=900');
    const problem = (await denied.json()) as { detail: string; "violated-policies": string[] };
    expect(problem["violated-policies"]).toEqual(["logins"]);
    expect(problem.detail).toMatch(/^rate limit exceeded \(logins\); blocked until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z; retry after 900 s$/);
    const until = Date.parse(/blocked until (\S+);/.exec(problem.detail)![1]!);
    expect(Math.abs(until - (Date.now() + 900_000))).toBeLessThan(60_000);

    nowMs += 120_000; // two windows later: refilled, still blocked
    const later = await app.request("/login");
    expect(later.status).toBe(429);
    expect(later.headers.get("retry-after")).toBe("780");
    nowMs += 780_000;
    expect((await app.request("/login")).status).toBe(200);
    await store.close();
  });

  it("/v1/peek reports the block (blockedMs) and starts none, /v1/reset ends it", async () => {
    let nowMs = 1_700_000_000_000;
    const store = new MemoryStore({ clockMs: () => nowMs });
    const service = new SpillwayService(store, parseConfig({ policies: [boxed] }));
    const api = createApi({ service, tokenOf: () => "t" });
    const post = (route: string, body: unknown) => api.request(`/${route}`, { method: "POST", headers: { authorization: "Bearer t", "content-type": "application/json" }, body: JSON.stringify(body) });
    const key = "bob";
    await post("check", { key, policy: "logins", cost: 2 });
    // A peek while over the limit: denied, but no block starts.
    expect(await (await post("peek", { key, policy: "logins" })).json()).not.toHaveProperty("blockedMs");
    const denied = await post("check", { key, policy: "logins" });
    expect(denied.status).toBe(429);
    expect(await denied.json()).toMatchObject({ allowed: false, retryAfterMs: 900_000, blockedMs: 900_000, policies: [{ policy: "logins", blockedMs: 900_000 }] });
    nowMs += 61_000;
    const peeked = await post("peek", { key, policy: "logins" });
    expect(peeked.status).toBe(200);
    expect(await peeked.json()).toMatchObject({ allowed: false, remaining: 0, blockedMs: 839_000, retryAfterMs: 839_000 });
    expect((await post("reset", { key, policy: "logins" })).status).toBe(204);
    expect(await (await post("check", { key, policy: "logins" })).json()).toMatchObject({ allowed: true, remaining: 1 });
    await store.close();
  });
});
