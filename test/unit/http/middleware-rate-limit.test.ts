import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { type RateLimitOptions, rateLimit } from "../../../src/http/middleware.js";
import { StoreFaultError, StoreUnavailableError } from "../../../src/core/limiter.js";
import { STORE_FAULT_TYPE, STORE_UNAVAILABLE_TYPE } from "../../../src/core/wire.js";
import { MemoryStore } from "../../../src/stores/memory.js";

const perMinute = { name: "per-minute", algorithm: "fixed-window", limit: 2, period: "1m" };
let limiter = new MemoryStore();
afterEach(async () => {
  await limiter.close();
  limiter = new MemoryStore();
});

const options = (overrides: Partial<RateLimitOptions> = {}): RateLimitOptions => ({
  store: limiter,
  policies: perMinute,
  key: (c) => c.req.header("x-user"),
  log: () => {},
  ...overrides,
});

function appWith(middlewareOptions: RateLimitOptions, handler: (c: import("hono").Context) => Response | Promise<Response> = (c) => c.text("ok")): Hono {
  const app = new Hono();
  app.use("/api/*", rateLimit(middlewareOptions));
  app.get("/api/*", handler);
  return app;
}
const get = (app: Hono, user?: string) => app.request("/api/x", { headers: user ? { "x-user": user } : {} });

describe("rateLimit(): validated when built", () => {
  const cases: [string, Partial<RateLimitOptions> | Record<string, unknown>, RegExp][] = [
    ["no store", { store: undefined }, /^rateLimit: store must be a Limiter/],
    ["a store that is not one", { store: {} }, /^rateLimit: store must be a Limiter.*got \{\}/],
    ["no key function", { key: "x-user" }, /^rateLimit: key must be a function.*got "x-user"/],
    ["an empty stack", { policies: [] }, /^rateLimit: policies must hold at least one policy/],
    ["a bad policy", { policies: { name: "p", limit: 0, period: "1m" } }, /^rateLimit: policies\.p\.limit: must be a positive integer.*got 0/],
    ["a policy without period", { policies: [{ name: "p", limit: 5 }] }, /^rateLimit: policies\.p\.period: is required/],
    ["duplicate names", { policies: [perMinute, perMinute] }, /^rateLimit: policies\.per-minute\.name: must be unique/],
    ["an unknown onLimit", { onLimit: "queue" }, /^rateLimit: onLimit must be "reject" or "delay", got "queue"/],
    ["delay without maxDelayMs", { onLimit: "delay" }, /^rateLimit: maxDelayMs must be above 0/],
    ["a fractional maxDelayMs", { onLimit: "delay", maxDelayMs: 1.5 }, /^rateLimit: maxDelayMs must be an integer.*got 1.5/],
    ["maxDelayMs with reject", { maxDelayMs: 100 }, /^rateLimit: maxDelayMs is only used with onLimit "delay"/],
    ["a dryRun that is not boolean", { dryRun: "yes" }, /^rateLimit: dryRun must be true or false, got "yes"/],
  ];
  it.each(cases)("throws a TypeError naming the option for %s", (_label, overrides, message) => {
    expect(() => rateLimit({ ...options(), ...overrides } as RateLimitOptions)).toThrow(TypeError);
    expect(() => rateLimit({ ...options(), ...overrides } as RateLimitOptions)).toThrow(message);
  });

  it("returns a named middleware", () => {
    expect(rateLimit(options()).name).toBe("spillwayRateLimit");
  });
});

describe("rateLimit(): at request time", () => {
  it("adds RateLimit fields, then answers 429 with a quota-exceeded problem", async () => {
    const app = appWith(options());
    const first = await get(app, "ann");
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"per-minute";q=2;w=60');
    expect(first.headers.get("ratelimit")).toMatch(/^"per-minute";r=1;t=\d+$/);
    await get(app, "ann");
    const denied = await get(app, "ann");
    expect(denied.status).toBe(429);
    expect(denied.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(await denied.json()).toMatchObject({ type: "https://iana.org/assignments/http-problem-types#quota-exceeded", "violated-policies": ["per-minute"] });
    expect((await get(app, "bob")).status).toBe(200);
  });

  it("answers 400 when the key function finds no key", async () => {
    const response = await get(appWith(options()));
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ status: 400, detail: expect.stringContaining("no rate-limit key") });
  });

  it("adds headers to a response with immutable headers (one straight from fetch)", async () => {
    const app = appWith(options(), async () => {
      const response = await fetch("data:text/plain,from-fetch");
      return response;
    });
    const response = await get(app, "cat");
    expect(await response.text()).toBe("from-fetch");
    expect(response.headers.get("ratelimit")).toMatch(/^"per-minute";r=1/);
  });

  it("holds a concurrency lease until the body ends", async () => {
    const slot = { name: "slot", algorithm: "concurrency", limit: 1 };
    let push!: (text: string | null) => void;
    const app = appWith(options({ policies: slot }), () => {
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          push = (text) => (text === null ? controller.close() : controller.enqueue(new TextEncoder().encode(text)));
        },
      });
      return new Response(body);
    });
    const first = await get(app, "dee");
    expect(first.status).toBe(200);
    expect((await get(app, "dee")).status).toBe(429);
    const reading = first.text();
    push("done");
    push(null);
    expect(await reading).toBe("done");
    await new Promise((resolve) => setTimeout(resolve, 10));
    const again = await get(app, "dee");
    expect(again.status).toBe(200);
    await again.body?.cancel();
  });

  it("dry run never blocks", async () => {
    const app = appWith(options({ dryRun: true }));
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await get(app, "eve"));
    expect(statuses.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(statuses[2]!.headers.get("spillway-dry-run")).toBe("denied");
  });

  it("delay holds a request for its slot", async () => {
    const app = appWith(options({ policies: { name: "spaced", algorithm: "gcra", limit: 10, period: "1s", burst: 1 }, onLimit: "delay", maxDelayMs: 300 }));
    expect((await get(app, "fay")).status).toBe(200);
    const started = performance.now();
    expect((await get(app, "fay")).status).toBe(200);
    expect(performance.now() - started).toBeGreaterThanOrEqual(80);
  });
});

describe("rateLimit(): a store that cannot decide", () => {
  const down = (error: Error) => ({ kind: "down", check: () => Promise.reject(error), peek: () => Promise.reject(error), debit: () => Promise.reject(error), reset: () => Promise.reject(error), acquire: () => Promise.reject(error), release: () => Promise.reject(error), extend: () => Promise.reject(error), credits: () => Promise.reject(error), health: () => Promise.reject(error) });

  it("fails closed with the 503 store-unavailable problem, and the handler never runs", async () => {
    let handled = 0;
    const app = appWith(options({ store: down(new StoreUnavailableError("connection refused")) }), (c) => {
      handled++;
      return c.text("ok");
    });
    const response = await get(app, "gus");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ type: STORE_UNAVAILABLE_TYPE, status: 503 });
    expect(handled).toBe(0);
  });

  it("fails open when every policy says so, marked Spillway-Failed-Open", async () => {
    const app = appWith(options({ store: down(new StoreUnavailableError("connection refused")), policies: { ...perMinute, failMode: "open" } }));
    const response = await get(app, "hal");
    expect(response.status).toBe(200);
    expect(response.headers.get("spillway-failed-open")).toBe("true");
  });

  it("a store fault is a 503 whatever the failMode", async () => {
    const app = appWith(options({ store: down(new StoreFaultError("ERR wrong type")), policies: { ...perMinute, failMode: "open" } }));
    const response = await get(app, "ida");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ type: STORE_FAULT_TYPE });
  });
});
