import type { IncomingMessage, ServerResponse } from "node:http";
import express, { type Request } from "express";
import { Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { rateLimit as honoRateLimit } from "../../../src/http/middleware.js";
import { rateLimit as nodeRateLimit } from "../../../src/node-middleware.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { type Listening, listen } from "../node/http/middleware-helpers.js";

// rateLimit()'s options as plain JavaScript passes them (no types to catch a mistake), and
// what migrating users need most: skip, a handler of their own for denials, header styles.
// Run on each host: Hono (app.request), Express 5 and a bare node:http server (real servers).

type Send = (user: string, headers?: Record<string, string>) => Promise<Response>;

interface Host {
  name: string;
  /** rateLimit(options) in front of a handler answering "ok"; options are JavaScript's: anything goes. */
  serve(options: Record<string, unknown>): Promise<Send>;
  build(options: Record<string, unknown>): unknown;
  /** skip: requests with `x-skip: yes` pass. */
  skip: unknown;
  /** handler: a 503 with `{ sorry, policies }` and the header `x-own: yes`. */
  handler: unknown;
}

const policy = { name: "per-minute", algorithm: "fixed-window", limit: 1, period: "1m" };
let running: Listening | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const base = () => ({ store: new MemoryStore(), policies: policy, log: () => {} });

const hono: Host = {
  name: "Hono",
  build: (options) => honoRateLimit({ key: (c) => c.req.header("x-user"), ...base(), ...options } as Parameters<typeof honoRateLimit>[0]),
  async serve(options) {
    const app = new Hono();
    app.use(this.build(options) as ReturnType<typeof honoRateLimit>);
    app.get("/", (c) => c.text("ok"));
    return (user, headers = {}) => Promise.resolve(app.request("/", { headers: { "x-user": user, ...headers } }));
  },
  skip: (c: { req: { header(name: string): string | undefined } }) => c.req.header("x-skip") === "yes",
  handler: (_c: unknown, denial: { problem: Record<string, unknown> }) =>
    new Response(JSON.stringify({ sorry: true, policies: denial.problem["violated-policies"] }), { status: 503, headers: { "x-own": "yes", "content-type": "application/json" } }),
};

const nodeSkip = (req: IncomingMessage) => req.headers["x-skip"] === "yes";
const nodeHandler = (_req: IncomingMessage, res: ServerResponse, denial: { problem: Record<string, unknown> }) => {
  res.statusCode = 503;
  res.setHeader("x-own", "yes");
  res.setHeader("content-type", "application/json");
  res.end(JSON.stringify({ sorry: true, policies: denial.problem["violated-policies"] }));
};
const fetcher = (url: string): Send => (user, headers = {}) => fetch(url, { headers: { "x-user": user, ...headers } });
const nodeBuild = (options: Record<string, unknown>) => nodeRateLimit({ key: (req) => req.headers["x-user"] as string | undefined, ...base(), ...options } as Parameters<typeof nodeRateLimit>[0]);

const bare: Host = {
  name: "node:http",
  build: nodeBuild,
  async serve(options) {
    const limit = nodeBuild(options);
    running = await listen((req, res) => void limit(req, res, (error) => (error ? res.writeHead(500).end(String(error)) : res.end("ok"))));
    return fetcher(running.url);
  },
  skip: nodeSkip,
  handler: nodeHandler,
};

const expressHost: Host = {
  name: "Express 5",
  build: nodeBuild,
  async serve(options) {
    const app = express();
    app.use(nodeRateLimit({ key: (req: Request) => req.get("x-user"), ...base(), ...options } as Parameters<typeof nodeRateLimit<Request>>[0]));
    app.get("/", (_req, res) => void res.send("ok"));
    running = await listen(app);
    return fetcher(running.url);
  },
  skip: nodeSkip,
  handler: (_req: Request, res: express.Response, denial: { problem: Record<string, unknown> }) => void res.status(503).set("x-own", "yes").json({ sorry: true, policies: denial.problem["violated-policies"] }),
};

describe.each([hono, expressHost, bare])("rateLimit() options on $name", (host) => {
  it("an unknown option throws a TypeError naming it, with Spillway's equivalent for express-rate-limit's names", () => {
    const thrown = (options: Record<string, unknown>) => {
      try {
        host.build(options);
      } catch (error) {
        expect(error).toBeInstanceOf(TypeError);
        return (error as Error).message;
      }
      return "accepted";
    };
    expect(thrown({ windowMs: 60_000 })).toMatch(/^rateLimit: unknown option "windowMs": Spillway's equivalent is a policy's period/);
    expect(thrown({ max: 5 })).toMatch(/unknown option "max": .*limit/);
    expect(thrown({ limit: 5 })).toMatch(/unknown option "limit": .*policies: \{ name: "per-1m", limit: 5, period: "1m" \}/);
    expect(thrown({ keyGenerator: () => "k" })).toMatch(/unknown option "keyGenerator": .*key:/);
    expect(thrown({ message: "Too many requests" })).toMatch(/unknown option "message": .*handler/);
    expect(thrown({ standardHeaders: true })).toMatch(/unknown option "standardHeaders": .*headers: "draft-10"/);
    expect(thrown({ polices: policy })).toBe('rateLimit: unknown option "polices" (did you mean "policies"?)');
    expect(thrown({ headers: "draft-8" })).toBe('rateLimit: headers must be one of "draft-10", "draft-7", "draft-6", "legacy", got "draft-8"');
    expect(thrown({ skip: true })).toMatch(/^rateLimit: skip must be a function/);
    expect(thrown({ handler: "go away" })).toMatch(/^rateLimit: handler must be a function/);
    expect(thrown({ skip: host.skip, handler: host.handler, headers: "legacy" })).toBe("accepted");
  });

  it("skip: a request it answers true for passes uncounted and without fields", async () => {
    const send = await host.serve({ skip: host.skip });
    for (let i = 0; i < 3; i++) {
      const skipped = await send("ann", { "x-skip": "yes" });
      expect(skipped.status).toBe(200);
      expect(skipped.headers.get("ratelimit")).toBeNull();
    }
    expect((await send("ann")).status).toBe(200);
    expect((await send("ann")).status).toBe(429);
  });

  it("handler answers a denial its way; the rate-limit fields and Retry-After are on its answer", async () => {
    const send = await host.serve({ handler: host.handler });
    expect((await send("bob")).status).toBe(200);
    const denied = await send("bob");
    expect(denied.status).toBe(503);
    expect(denied.headers.get("x-own")).toBe("yes");
    expect(await denied.json()).toEqual({ sorry: true, policies: ["per-minute"] });
    expect(denied.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(denied.headers.get("ratelimit")).toMatch(/^"per-minute";r=0;t=\d+$/);
  });

  it.each([
    ["draft-10", { "ratelimit-policy": '"per-minute";q=1;w=60', ratelimit: /^"per-minute";r=0;t=\d+$/ }],
    ["draft-7", { "ratelimit-policy": "1;w=60", ratelimit: /^limit=1, remaining=0, reset=\d+$/ }],
    ["draft-6", { "ratelimit-policy": "1;w=60", "ratelimit-limit": "1", "ratelimit-remaining": "0", "ratelimit-reset": /^\d+$/, ratelimit: null }],
    ["legacy", { "x-ratelimit-limit": "1", "x-ratelimit-remaining": "0", "x-ratelimit-reset": /^\d+$/, ratelimit: null, "ratelimit-policy": null }],
  ] as const)("headers: %s on the admitted answer and the denial (with Retry-After)", async (style, fields) => {
    const send = await host.serve({ headers: style });
    const admitted = await send("cy");
    const denied = await send("cy");
    expect([admitted.status, denied.status]).toEqual([200, 429]);
    for (const answer of [admitted, denied]) {
      for (const [name, expected] of Object.entries(fields)) {
        const value = answer.headers.get(name);
        if (expected === null || typeof expected === "string") expect(value, name).toBe(expected);
        else expect(value, name).toMatch(expected);
      }
    }
    expect(admitted.headers.get("retry-after")).toBeNull();
    expect(denied.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    const reset = Number(denied.headers.get("x-ratelimit-reset") ?? denied.headers.get("ratelimit-reset") ?? /reset=(\d+)/.exec(denied.headers.get("ratelimit") ?? "")?.[1] ?? NaN);
    if (style !== "draft-10") expect(reset).toBeGreaterThan(0);
  });

  it("draft-7's policy field states the capacity its limit counts against (a gcra burst over its refill time)", async () => {
    const send = await host.serve({ headers: "draft-7", policies: { name: "bursty", algorithm: "gcra", limit: 60, period: "1m", burst: 10 } });
    const admitted = await send("di");
    expect(admitted.headers.get("ratelimit-policy")).toBe("10;w=10");
    expect(admitted.headers.get("ratelimit")).toMatch(/^limit=10, remaining=9, reset=\d+$/);
  });
});
