import { describe, expect, it } from "vitest";
import { type NodeRateLimitOptions, rateLimit } from "../../../../src/node-middleware.js";
import { type Listening, abortedGet, listen, perTest } from "./middleware-helpers.js";
import { type RawHandler, nodeMiddlewareSuite } from "./middleware-suite.js";
import { nodeMiddlewareCountingSuite } from "./middleware-counting-suite.js";

const perMinute = { name: "per-minute", algorithm: "fixed-window", limit: 1, period: "1m" };
const current = perTest();

const options = (overrides: Partial<NodeRateLimitOptions> | Record<string, unknown> = {}): NodeRateLimitOptions => ({
  store: current.store,
  policies: perMinute,
  key: (req) => req.headers["x-user"] as string | undefined,
  log: () => {},
  ...overrides,
});

/** What next(error) received on the last request, if anything. */
let nextError: unknown;

/** A bare node:http server: the middleware, with our own `next` that runs the handler or answers the error. */
function mountBare(middlewareOptions: NodeRateLimitOptions, handler: RawHandler): Promise<Listening> {
  const limit = rateLimit(middlewareOptions);
  return listen((req, res) => {
    void limit(req, res, (error) => {
      if (error === undefined) return void handler(req, res);
      nextError = error;
      res.statusCode = 500;
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ caught: (error as Error).message }));
    });
  });
}

nodeMiddlewareSuite("a bare node:http server", mountBare);
nodeMiddlewareCountingSuite("a bare node:http server", mountBare);

async function serve(middlewareOptions: NodeRateLimitOptions, handler: RawHandler = (_req, res) => void res.end("ok")): Promise<string> {
  nextError = undefined;
  current.running = await mountBare(middlewareOptions, handler);
  return current.running.url;
}
const get = (url: string, user?: string) => fetch(url, { headers: user ? { "x-user": user } : {} });

describe("spillway/node: validated when built", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["no store", { store: undefined }, /^rateLimit: store must be a Limiter/],
    ["no key function", { key: "x-user" }, /^rateLimit: key must be a function \(req\) => string, got "x-user"/],
    ["an empty stack", { policies: [] }, /^rateLimit: policies must hold at least one policy/],
    ["a bad policy", { policies: { name: "p", limit: 0, period: "1m" } }, /^rateLimit: policies\.p\.limit: must be a positive integer.*got 0/],
    ["an unknown onLimit", { onLimit: "queue" }, /^rateLimit: onLimit must be "reject" or "delay", got "queue"/],
    ["delay without maxDelayMs", { onLimit: "delay" }, /^rateLimit: maxDelayMs must be above 0/],
    ["a legacyHeaders that is not boolean", { legacyHeaders: 1 }, /^rateLimit: legacyHeaders must be true or false, got 1/],
    ["a log that is not a function", { log: console }, /^rateLimit: log must be a function/],
  ];
  it.each(cases)("throws a TypeError naming the option for %s", (_label, overrides, message) => {
    expect(() => rateLimit(options(overrides))).toThrow(TypeError);
    expect(() => rateLimit(options(overrides))).toThrow(message);
  });

  it("returns a named (req, res, next) middleware", () => {
    const middleware = rateLimit(options());
    expect(middleware.name).toBe("spillwayRateLimit");
    expect(middleware.length).toBe(3);
  });
});

describe("spillway/node on a bare node:http server", () => {
  it("adds RateLimit fields (and legacy ones on request), then answers 429 with a problem", async () => {
    const url = await serve(options({ legacyHeaders: true }));
    const first = await get(url, "ann");
    expect(first.status).toBe(200);
    expect(first.headers.get("ratelimit-policy")).toBe('"per-minute";q=1;w=60');
    expect(first.headers.get("x-ratelimit-remaining")).toBe("0");
    const denied = await get(url, "ann");
    expect(denied.status).toBe(429);
    expect(denied.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(denied.headers.get("content-type")).toBe("application/problem+json");
    expect(await denied.json()).toMatchObject({ status: 429, "violated-policies": ["per-minute"] });
    expect(nextError).toBeUndefined();
  });

  it("answers 400 for a key over 512 bytes, counting nothing", async () => {
    const url = await serve(options({ key: () => "é".repeat(257) }));
    const response = await get(url);
    expect(response.status).toBe(400);
    expect(await response.json()).toMatchObject({ detail: "the rate-limit key is over 512 bytes" });
  });

  it("a delayed request whose client leaves never reaches the handler", async () => {
    let handled = 0;
    const url = await serve(options({ policies: { name: "spaced", algorithm: "gcra", limit: 1, period: "300ms", burst: 1 }, onLimit: "delay", maxDelayMs: 1000 }), (_req, res) => {
      handled++;
      res.end("ok");
    });
    expect((await get(url, "cy")).status).toBe(200);
    // The second request waits ~300 ms for its slot; the client leaves after 50 ms.
    await abortedGet(url, "cy", new Promise((resolve) => setTimeout(resolve, 50)));
    await new Promise((resolve) => setTimeout(resolve, 400));
    expect(handled).toBe(1);
  });
});
