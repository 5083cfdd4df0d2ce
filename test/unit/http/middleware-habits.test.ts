import http from "node:http";
import express, { type Request } from "express";
import { Hono } from "hono";
import { afterEach, describe, expect, expectTypeOf, it } from "vitest";
import { type RateLimitEnv, type RateLimitInfo, ipKey as honoIpKey, rateLimit as honoRateLimit } from "../../../src/hono.js";
import { MemoryStore, ipKey, rateLimit } from "../../../src/node-middleware.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { type Listening, listen } from "../node/http/middleware-helpers.js";
import { thrownMessage } from "../core/thrown-message.js";

const message = thrownMessage;

// What users bring from express-rate-limit and hono-rate-limiter (issue 45, newcomer 7): the
// decision readable by the handler, resetKey(key) on the middleware, and an IPv6-subnet key.

const twoPerHour = { name: "two-per-hour", algorithm: "fixed-window", limit: 2, period: "1h" };
const stores: MemoryStore[] = [];
const servers: Listening[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close();
  for (const store of stores.splice(0)) await store.close();
});
const freshStore = () => {
  const store = new MemoryStore();
  stores.push(store);
  return store;
};

describe("the decision, readable by the handler", () => {
  it("Express: req.rateLimit, typed, set before the handler runs", async () => {
    const app = express();
    app.use(rateLimit({ store: freshStore(), policies: twoPerHour, key: (req: Request) => req.get("x-user"), log: () => {} }));
    app.get("/", (req, res) => {
      expectTypeOf(req.rateLimit).toEqualTypeOf<RateLimitInfo | undefined>();
      res.json({ key: req.rateLimit?.key, remaining: req.rateLimit?.remaining, limit: req.rateLimit?.limit, policy: req.rateLimit?.policy, allowed: req.rateLimit?.allowed });
    });
    const server = await listen(app);
    servers.push(server);
    const read = async () => (await fetch(server.url, { headers: { "x-user": "ann" } })).json();
    expect(await read()).toEqual({ key: "ann", remaining: 1, limit: 2, policy: "two-per-hour", allowed: true });
    expect(await read()).toEqual({ key: "ann", remaining: 0, limit: 2, policy: "two-per-hour", allowed: true });
  });

  it("node:http: req.rateLimit on the IncomingMessage", async () => {
    const limit = rateLimit({ store: freshStore(), policies: twoPerHour, key: (req) => req.headers["x-user"] as string | undefined, log: () => {} });
    const server = await listen((req, res) =>
      limit(req, res, () => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ remaining: req.rateLimit?.remaining, resetMs: typeof req.rateLimit?.resetMs, policies: req.rateLimit?.policies.length }));
      }),
    );
    servers.push(server);
    const answer = await fetch(server.url, { headers: { "x-user": "bo" } });
    expect(await answer.json()).toEqual({ remaining: 1, resetMs: "number", policies: 1 });
  });

  it('Hono: c.get("rateLimit"), typed through the middleware\'s Env', async () => {
    const app = new Hono().use(honoRateLimit({ store: freshStore(), policies: twoPerHour, key: (c) => c.req.header("x-user"), log: () => {} })).get("/", (c) => {
      const info = c.get("rateLimit");
      expectTypeOf(info).toEqualTypeOf<RateLimitInfo | undefined>();
      return c.json({ key: info?.key, remaining: info?.remaining });
    });
    expect(await (await app.request("/", { headers: { "x-user": "cy" } })).json()).toEqual({ key: "cy", remaining: 1 });
    // Declared on the app instead of chained.
    const declared = new Hono<RateLimitEnv>();
    declared.use(honoRateLimit({ store: freshStore(), policies: twoPerHour, key: () => "one", log: () => {} }));
    declared.get("/", (c) => c.text(String(c.get("rateLimit")?.remaining)));
    expect(await (await declared.request("/")).text()).toBe("1");
  });

  it("with count (a peek before the handler): the state before the request's debit", async () => {
    const app = new Hono().use(honoRateLimit({ store: freshStore(), policies: twoPerHour, key: () => "k", count: ["4xx"], log: () => {} })).get("/", (c) => c.text(String(c.get("rateLimit")?.remaining), 401));
    expect(await (await app.request("/")).text()).toBe("2");
    expect(await (await app.request("/")).text()).toBe("1");
  });
});

describe("resetKey(key)", () => {
  it("Express: a fresh budget for that key under the middleware's policies, in its store; other keys keep theirs", async () => {
    const store = freshStore();
    const limiter = rateLimit({ store, policies: [twoPerHour, { name: "five-per-day", algorithm: "fixed-window", limit: 5, period: "1d" }], key: (req: Request) => req.get("x-user"), log: () => {} });
    const app = express();
    app.use(limiter);
    app.get("/", (_req, res) => void res.send("ok"));
    const server = await listen(app);
    servers.push(server);
    const statuses = async (user: string, count: number) => {
      const seen: number[] = [];
      for (let i = 0; i < count; i++) seen.push((await fetch(server.url, { headers: { "x-user": user } })).status);
      return seen;
    };
    expect(await statuses("dee", 3)).toEqual([200, 200, 429]);
    expect(await statuses("eve", 3)).toEqual([200, 200, 429]);
    await limiter.resetKey("dee");
    expect(await statuses("dee", 3)).toEqual([200, 200, 429]);
    expect(await statuses("eve", 1)).toEqual([429]);
    // Both policies were reset: a peek of the day's policy shows the two just spent, not four.
    expect((await store.peek("dee", [parsePolicy({ name: "five-per-day", algorithm: "fixed-window", limit: 5, period: "1d" }, "policy")])).remaining).toBe(3);
  });

  it("Hono: the same, and a composite key is joined as the key function's is", async () => {
    const limiter = honoRateLimit({ store: freshStore(), policies: twoPerHour, key: (c) => [c.req.header("x-user"), "web"], log: () => {} });
    const app = new Hono().use(limiter).get("/", (c) => c.text("ok"));
    const status = async () => (await app.request("/", { headers: { "x-user": "fay" } })).status;
    expect([await status(), await status(), await status()]).toEqual([200, 200, 429]);
    await limiter.resetKey(["fay", "web"]);
    expect(await status()).toBe(200);
    await expect(limiter.resetKey("")).rejects.toThrow('resetKey: key must be what the key function answers (a non-empty string, or an array of them), got ""');
  });

  it("resets a key spelled like a route's (header:…), which the middleware keeps in its own namespace", async () => {
    const limiter = honoRateLimit({ store: freshStore(), policies: twoPerHour, key: () => "header:x-api-key:victim", log: () => {} });
    const app = new Hono().use(limiter).get("/", (c) => c.text("ok"));
    const status = async () => (await app.request("/")).status;
    expect([await status(), await status(), await status()]).toEqual([200, 200, 429]);
    await limiter.resetKey("header:x-api-key:victim");
    expect(await status()).toBe(200);
  });

  it("under a burst after a reset, the key gets exactly its limit", async () => {
    const limiter = honoRateLimit({ store: freshStore(), policies: twoPerHour, key: () => "burst", log: () => {} });
    const app = new Hono().use(limiter).get("/", (c) => c.text("ok"));
    for (let i = 0; i < 3; i++) await app.request("/");
    await limiter.resetKey("burst");
    const burst = await Promise.all(Array.from({ length: 50 }, () => Promise.resolve(app.request("/")).then((answer) => answer.status)));
    expect(burst.filter((status) => status === 200)).toHaveLength(2);
  });
});

describe("ipKey: an IPv6 subnet as one key", () => {
  it("counts an IPv6 /56 by default, as express-rate-limit v8 does; IPv4 whole; every spelling one key", () => {
    expect(ipKey("2001:db8:0:1ff:aaaa::1")).toBe("2001:db8:0:100::/56");
    expect(ipKey("2001:DB8:0:1AB:0:0:0:2")).toBe("2001:db8:0:100::/56");
    expect(ipKey("2001:db8:0:1ff::1", { ipv6Subnet: 64 })).toBe("2001:db8:0:1ff::/64");
    expect(ipKey("2001:db8::1", { ipv6Subnet: false })).toBe("2001:db8::1");
    expect(ipKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
    expect(ipKey("203.0.113.7", { ipv6Subnet: 48 })).toBe("203.0.113.7");
    expect(ipKey(undefined)).toBeUndefined();
    expect(ipKey("not an address")).toBeUndefined();
    expect(() => ipKey("::1", { ipv6Subnet: 0 })).toThrow("ipKey: ipv6Subnet must be an integer from 1 to 128 or false, got 0");
    // The one helper in both entry points, and the gateway's own `ip/56` form.
    expect(honoIpKey).toBe(ipKey);
  });

  it("reads Express's req.ip (trust proxy honoured) or the socket's address", async () => {
    const limiter = rateLimit({ store: freshStore(), policies: twoPerHour, key: (req: Request) => ipKey(req), log: () => {} });
    const app = express();
    app.set("trust proxy", "loopback");
    app.use(limiter);
    app.get("/", (req, res) => void res.send(req.rateLimit?.key));
    const server = await listen(app);
    servers.push(server);
    // Two addresses of one /56 behind the trusted loopback proxy share one budget.
    const from = async (address: string) => fetch(server.url, { headers: { "x-forwarded-for": address } });
    const first = await from("2001:db8:0:1ff::1");
    expect(await first.text()).toBe("2001:db8:0:100::/56");
    expect((await from("2001:db8:0:1aa::9")).status).toBe(200);
    expect((await from("2001:db8:0:1bb::7")).status).toBe(429);
    // No proxy header: the socket's own address.
    const direct = rateLimit({ store: freshStore(), policies: twoPerHour, key: (req) => ipKey(req), log: () => {} });
    const bare = await listen((req, res) => direct(req, res, () => res.end(req.rateLimit?.key)));
    servers.push(bare);
    expect(await (await fetch(bare.url)).text()).toBe("127.0.0.1");
  });
});

describe("rateLimit() options brought from express-rate-limit", () => {
  it("the windowMs hint shows the user's own window and limit, converted", () => {
    const build = (options: Record<string, unknown>) => message(() => honoRateLimit({ store: new MemoryStore(), key: () => "k", ...options } as never));
    expect(build({ windowMs: 60_000 })).toBe(
      'rateLimit: unknown option "windowMs": Spillway\'s equivalent is a policy\'s period: policies: { name: "per-1m", limit: 100, period: "1m" } (windowMs: 60000 is period: "1m", or period: 60000)',
    );
    expect(build({ windowMs: 15 * 60 * 1000, max: 250 })).toBe(
      'rateLimit: unknown option "windowMs": Spillway\'s equivalent is a policy\'s period: policies: { name: "per-15m", limit: 250, period: "15m" } (windowMs: 900000 is period: "15m", or period: 900000)',
    );
    expect(build({ max: 5, windowMs: 1500 })).toBe('rateLimit: unknown option "max": Spillway\'s equivalent is a policy\'s limit: policies: { name: "per-1500ms", limit: 5, period: "1500ms" }');
    // rate-limiter-flexible's duration is in seconds.
    expect(build({ points: 10, duration: 3600 })).toBe('rateLimit: unknown option "points": Spillway\'s equivalent is a policy\'s limit: policies: { name: "per-1h", limit: 10, period: "1h" }');
  });
});


// node:http's request type carries the field for every app that imports spillway/node.
expectTypeOf<http.IncomingMessage["rateLimit"]>().toEqualTypeOf<RateLimitInfo | undefined>();
