import { type Context, Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { type RateLimitOptions, rateLimit } from "../../../src/http/middleware.js";
import { MemoryStore } from "../../../src/stores/memory.js";

// rateLimit()'s `count` and `cost` on Hono (docs/counting.md): peek before the handler, debit
// after it, the answer's RateLimit fields showing the state after the debit.
const three = { name: "three", algorithm: "fixed-window", limit: 3, period: "1h" };
const budget = { name: "budget", algorithm: "fixed-window", limit: 100, period: "1h" };
let store = new MemoryStore();
afterEach(async () => {
  await store.close();
  store = new MemoryStore();
});

const options = (overrides: Partial<RateLimitOptions>): RateLimitOptions => ({ store, policies: three, key: (c) => c.req.header("x-user"), log: () => {}, ...overrides });

function appWith(middlewareOptions: RateLimitOptions, handler: (c: Context) => Response | Promise<Response>): { app: Hono; hits: () => number } {
  let hits = 0;
  const app = new Hono();
  app.use("/api/*", rateLimit(middlewareOptions));
  app.all("/api/*", (c) => {
    hits++;
    return handler(c);
  });
  return { app, hits: () => hits };
}
const get = (app: Hono, user: string, headers: Record<string, string> = {}) => app.request("/api/x", { headers: { "x-user": user, ...headers } });
const remainingOf = (response: Response) => Number(/;r=(\d+)/.exec(response.headers.get("ratelimit") ?? "")?.[1]);

describe("rateLimit(): count and cost, validated when built", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["a count that is neither list nor function", { count: 401 }, /^rateLimit: count must be an array of codes from 100 to 599 or classes/],
    ["a bad status", { count: [401, "4XX"] }, /^rateLimit: count\.1 must be a status code from 100 to 599 or a class "1xx" to "5xx", got "4XX"/],
    ["an empty status list", { count: [] }, /^rateLimit: count must name at least one status/],
    ["a negative cost", { cost: -1 }, /^rateLimit: cost must be an integer from 0 to 1000000000, \{ request: \(req\) => number \} or \{ response: \(res, req\) => number \}, got -1/],
    ["a cost function without its side", { cost: () => 1 }, /^rateLimit: cost must be .*got/],
    ["a cost naming both sides", { cost: { request: () => 1, response: () => 1 } }, /^rateLimit: cost must be /],
    ["a cost.response that is no function", { cost: { response: "x-usage" } }, /^rateLimit: cost\.response must be a function, got "x-usage"/],
    ["count with delay", { count: [401], onLimit: "delay", maxDelayMs: 100 }, /^rateLimit: onLimit must be "reject" with count/],
    ["count on concurrency alone", { count: [401], policies: { name: "slot", algorithm: "concurrency", limit: 1 } }, /^rateLimit: count counts nothing/],
  ];
  it.each(cases)("throws a TypeError naming the option for %s", (_label, overrides, message) => {
    expect(() => rateLimit(options(overrides as Partial<RateLimitOptions>))).toThrow(TypeError);
    expect(() => rateLimit(options(overrides as Partial<RateLimitOptions>))).toThrow(message);
  });
});

describe("rateLimit(): count and cost on Hono", () => {
  it("count: only failed answers are debited; the answer shows the state after its debit; then 429 without the handler", async () => {
    const { app, hits } = appWith(options({ count: [401, "5xx"] }), (c) => (c.req.header("x-password") === "right" ? c.text("welcome") : c.text("no", 401)));
    const passed = await get(app, "ann", { "x-password": "right" });
    expect([passed.status, remainingOf(passed)]).toEqual([200, 3]);
    const failed = [];
    for (let i = 0; i < 3; i++) failed.push(await get(app, "ann"));
    expect(failed.map((response) => [response.status, remainingOf(response)])).toEqual([[401, 2], [401, 1], [401, 0]]);
    expect(failed[2]!.headers.get("retry-after")).toBeNull();
    const before = hits();
    const refused = await get(app, "ann", { "x-password": "right" });
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(hits()).toBe(before);
  });

  it("count as a function of the response", async () => {
    const { app } = appWith(options({ count: (res) => res.headers.get("x-login") === "failed" }), (c) => c.text("no", 200, { "x-login": "failed" }));
    expect(remainingOf(await get(app, "bea"))).toBe(2);
  });

  it("cost.response: debited past the limit, and later requests wait the debt out", async () => {
    const { app } = appWith(options({ policies: budget, cost: { response: (res) => Number(res.headers.get("x-tokens")) } }), (c) => c.text("ok", 200, { "x-tokens": "70" }));
    expect(remainingOf(await get(app, "cy"))).toBe(30);
    const over = await get(app, "cy");
    expect([over.status, remainingOf(over)]).toEqual([200, 0]);
    expect((await get(app, "cy")).status).toBe(429);
    expect((await store.peek("cy", [{ name: "budget", algorithm: "fixed-window", limit: 100, periodMs: 3_600_000, burst: 100, leaseMs: 30_000, failMode: "closed" }])).remaining).toBe(0);
  });

  it("cost.request and a constant are checked before the handler, at that cost", async () => {
    const { app, hits } = appWith(options({ policies: budget, cost: { request: (c) => Number(c.req.header("x-cost")) } }), (c) => c.text("ok"));
    expect(remainingOf(await get(app, "di", { "x-cost": "60" }))).toBe(40);
    const before = hits();
    expect((await get(app, "di", { "x-cost": "41" })).status).toBe(429);
    expect(hits()).toBe(before);
    const constant = appWith(options({ policies: budget, cost: 25 }), (c) => c.text("ok"));
    expect(remainingOf(await get(constant.app, "ed"))).toBe(75);
  });

  it("a cost function's bad answer counts 1 and is logged once a minute, never a 500", async () => {
    const logs: Record<string, unknown>[] = [];
    const { app } = appWith(options({ policies: budget, log: (entry) => logs.push(entry), cost: { response: () => Number.NaN } }), (c) => c.text("ok"));
    const response = await get(app, "fu");
    expect([response.status, remainingOf(response)]).toEqual([200, 99]);
    expect(remainingOf(await get(app, "fu"))).toBe(98);
    // Once a minute, however often it happens.
    expect(logs).toMatchObject([{ event: "usage-unusable", option: "cost.response", value: "NaN", cost: 1 }]);
  });

  it("dry run: a key past its limit still reaches the handler, reported in headers and logs, and is still debited", async () => {
    const logs: Record<string, unknown>[] = [];
    const { app, hits } = appWith(options({ count: [401], dryRun: true, log: (entry) => logs.push(entry) }), (c) => c.text("no", 401));
    const replies = [];
    for (let i = 0; i < 5; i++) replies.push(await get(app, "hy"));
    expect(replies.map((response) => response.status)).toEqual([401, 401, 401, 401, 401]);
    expect(hits()).toBe(5);
    expect(replies.map((response) => response.headers.get("spillway-dry-run"))).toEqual(["allowed", "allowed", "allowed", "denied", "denied"]);
    expect(replies.map((response) => response.headers.get("retry-after"))).toEqual([null, null, null, null, null]);
    expect(logs.filter((entry) => entry.event === "dry-run-deny")).toHaveLength(2);
  });

  it("block: the refusal after counted failures starts the policy's block", async () => {
    const { app } = appWith(options({ policies: { name: "strikes", algorithm: "fixed-window", limit: 1, period: "1h", block: "1d" }, count: [401] }), (c) => c.text("no", 401));
    expect((await get(app, "ivy")).status).toBe(401);
    const refused = await get(app, "ivy");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(3600);
  });

  it("count with a request cost debits that cost on counted answers only", async () => {
    const { app } = appWith(options({ policies: budget, count: [429], cost: { request: () => 10 } }), (c) => c.text(c.req.header("x-busy") ? "busy" : "ok", c.req.header("x-busy") ? 429 : 200));
    expect(remainingOf(await get(app, "gi"))).toBe(100);
    expect(remainingOf(await get(app, "gi", { "x-busy": "1" }))).toBe(90);
  });
});
