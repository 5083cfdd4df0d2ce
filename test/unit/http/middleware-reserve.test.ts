import { type Context, Hono } from "hono";
import { afterEach, describe, expect, it } from "vitest";
import { type RateLimitEnv, type RateLimitOptions, rateLimit } from "../../../src/http/middleware.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { StoreUnavailableError } from "../../../src/core/limiter.js";
import type { CheckOptions, Decision, Policy } from "../../../src/core/types.js";

// rateLimit()'s `estimate` on Hono (docs/counting.md, "Reserve, then settle"): the estimate is
// checked and consumed before the handler, the handler settles what it used, once.
const tokens = { name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" };
const TOKENS = parsePolicy(tokens, "tokens");
let store = new MemoryStore();
let logged: Record<string, unknown>[] = [];
afterEach(async () => {
  await store.close();
  store = new MemoryStore();
  logged = [];
});

const options = (overrides: Partial<RateLimitOptions>): RateLimitOptions => ({ store, policies: tokens, key: (c) => c.req.header("x-user"), log: (entry) => void logged.push(entry), ...overrides });

function appWith(middlewareOptions: RateLimitOptions, handler: (c: Context<RateLimitEnv>) => Response | Promise<Response>): { app: Hono; hits: () => number } {
  let hits = 0;
  const app = new Hono<RateLimitEnv>();
  app.use("/api/*", rateLimit(middlewareOptions));
  app.all("/api/*", (c) => {
    hits++;
    return handler(c);
  });
  app.onError((error, c) => c.json({ caught: error.message }, 500));
  return { app: app as unknown as Hono, hits: () => hits };
}
const get = (app: Hono, user: string, headers: Record<string, string> = {}) => app.request("/api/x", { headers: { "x-user": user, ...headers } });
const remaining = (user: string) => store.peek(user, [TOKENS]).then((decision) => decision.remaining);
const remainingOf = (response: Response) => Number(/;r=(\d+)/.exec(response.headers.get("ratelimit") ?? "")?.[1]);

describe("rateLimit(): estimate, validated when built", () => {
  const cases: [string, Record<string, unknown>, RegExp][] = [
    ["a negative estimate", { estimate: -1 }, /^rateLimit: estimate must be an integer from 0 to 1000000000 or a function \(req\) => number, got -1/],
    ["an estimate that is a string", { estimate: "max_tokens" }, /^rateLimit: estimate must be .*got "max_tokens"/],
    ["estimate with count", { estimate: 10, count: [200] }, /^rateLimit: count does not go with estimate/],
    ["estimate with a constant cost", { estimate: 10, cost: 5 }, /^rateLimit: cost must be \{ response: \(res, req\) => number \} with estimate/],
    ["estimate with a request cost", { estimate: 10, cost: { request: () => 5 } }, /^rateLimit: cost must be \{ response/],
    ["estimate with delay", { estimate: 10, onLimit: "delay", maxDelayMs: 100 }, /^rateLimit: onLimit must be "reject" with estimate/],
    ["estimate on concurrency alone", { estimate: 10, policies: { name: "slot", algorithm: "concurrency", limit: 1 } }, /^rateLimit: estimate reserves nothing/],
  ];
  it.each(cases)("throws a TypeError naming the option for %s", (_label, overrides, message) => {
    expect(() => rateLimit(options(overrides as Partial<RateLimitOptions>))).toThrow(TypeError);
    expect(() => rateLimit(options(overrides as Partial<RateLimitOptions>))).toThrow(message);
  });
});

describe("rateLimit(): reserve, then settle on Hono", () => {
  it("20 requests at once against a budget of 5 answers: 5 reach the handler, the other 15 get 429 before it", async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const { app, hits } = appWith(options({ estimate: 2000 }), async (c) => {
      await held; // the model is still answering when the others arrive
      await c.get("rateLimit")!.settle(2000);
      return c.text("answer");
    });
    const answers = Array.from({ length: 20 }, () => get(app, "ann"));
    await new Promise((resolve) => setTimeout(resolve, 20));
    release();
    const statuses = (await Promise.all(answers)).map((response) => response.status);
    expect(statuses.filter((status) => status === 200)).toHaveLength(5);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    expect(hits()).toBe(5);
    expect(await remaining("ann")).toBe(0);
  });

  it("settle gives unused units back and the answer shows the state after it", async () => {
    const { app } = appWith(options({ estimate: (c) => Number(c.req.header("x-max-tokens")) }), async (c) => {
      const info = c.get("rateLimit")!;
      expect([info.estimate, info.remaining]).toEqual([4096, 10_000 - 4096]);
      await info.settle(1000);
      return c.text("answer");
    });
    const answer = await get(app, "bo", { "x-max-tokens": "4096" });
    expect([answer.status, remainingOf(answer)]).toEqual([200, 9000]);
    expect(await remaining("bo")).toBe(9000);
  });

  it("an excess is charged past the limit: the key is in debt and the next request waits it out", async () => {
    const { app } = appWith(options({ estimate: 100 }), async (c) => {
      await c.get("rateLimit")!.settle(15_000);
      return c.text("long answer");
    });
    expect((await get(app, "cy")).status).toBe(200);
    expect(await remaining("cy")).toBe(0);
    expect((await get(app, "cy")).status).toBe(429);
  });

  it("a second settle throws, naming the first; the first stands", async () => {
    const { app } = appWith(options({ estimate: 500 }), async (c) => {
      await c.get("rateLimit")!.settle(200);
      await c.get("rateLimit")!.settle(100);
      return c.text("unreachable");
    });
    const answer = await get(app, "di");
    expect(answer.status).toBe(500);
    expect(await answer.json()).toEqual({ caught: "rateLimit: settle() was called twice for one request (first with 200, now with 100): a reservation settles once" });
    expect(await remaining("di")).toBe(9800);
  });

  it("a handler that throws or never settles keeps its reservation", async () => {
    const { app } = appWith(options({ estimate: 3000 }), (c) => {
      if (c.req.header("x-fail")) throw new Error("model down");
      return c.text("no usage read");
    });
    expect((await get(app, "ed", { "x-fail": "1" })).status).toBe(500);
    expect(await remaining("ed")).toBe(7000);
    expect((await get(app, "ed")).status).toBe(200);
    expect(await remaining("ed")).toBe(4000);
  });

  it("settle(undefined) (an answer without usage) keeps the reservation, logged", async () => {
    const { app } = appWith(options({ estimate: 3000 }), async (c) => {
      await c.get("rateLimit")!.settle(undefined);
      return c.text("answer");
    });
    expect((await get(app, "fay")).status).toBe(200);
    expect(await remaining("fay")).toBe(7000);
    expect(logged).toEqual([expect.objectContaining({ event: "usage-unusable", option: "settle", value: "nothing", cost: 3000 })]);
  });

  it("cost.response settles from the answer when the handler did not; a handler's own settle wins", async () => {
    const { app } = appWith(options({ estimate: 4000, cost: { response: (res) => Number(res.headers.get("x-tokens")) } }), async (c) => {
      if (c.req.header("x-own")) await c.get("rateLimit")!.settle(10);
      return c.text("answer", 200, { "x-tokens": "1500" });
    });
    const answer = await get(app, "gus");
    expect(remainingOf(answer)).toBe(8500);
    await get(app, "gus", { "x-own": "1" });
    // Refilled a little meanwhile at most: 8500 − 10, not − 1500.
    expect(await remaining("gus")).toBeGreaterThanOrEqual(8490);
    expect(await remaining("gus")).toBeLessThan(8500 + 10);
  });

  it("settles after the answer went out: a stream whose usage comes at its end", async () => {
    let settled!: Promise<void>;
    const { app } = appWith(options({ estimate: 4000 }), (c) => {
      const info = c.get("rateLimit")!;
      // The first event is queued at once; the usage comes when the client reads on.
      const body = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("data: hello\n\n"));
        },
        pull(controller) {
          settled = info.settle(250);
          controller.close();
        },
      });
      return new Response(body, { headers: { "content-type": "text/event-stream" } });
    });
    const answer = await get(app, "hal");
    expect(remainingOf(answer)).toBe(6000);
    expect(await answer.text()).toBe("data: hello\n\n");
    await settled;
    expect(await remaining("hal")).toBe(9750);
  });

  it("an estimate that is not a whole number reserves the policies' least burst, logged; a middleware without estimate has nothing to settle", async () => {
    const { app } = appWith(options({ estimate: () => Number.NaN }), (c) => c.text("ok"));
    expect((await get(app, "ida")).status).toBe(200);
    expect(await remaining("ida")).toBe(0);
    expect(logged).toEqual([expect.objectContaining({ event: "usage-unusable", option: "estimate", value: "NaN", cost: 10_000 })]);
    const plain = appWith(options({}), async (c) => {
      await c.get("rateLimit")!.settle(5);
      return c.text("unreachable");
    });
    expect(await (await get(plain.app, "jo")).json()).toEqual({ caught: expect.stringMatching(/^rateLimit: settle\(\) settles a reservation, which the middleware takes with its estimate option/) });
  });

  it("all-or-nothing over the stack: a reservation one policy refuses takes nothing from the other", async () => {
    const perMinute = { name: "per-minute", algorithm: "fixed-window", limit: 2, period: "1m" };
    const { app } = appWith(options({ policies: [tokens, { name: "small", algorithm: "fixed-window", limit: 1000, period: "1m" }, perMinute], estimate: 2000 }), (c) => c.text("ok"));
    expect((await get(app, "kay")).status).toBe(429);
    expect(await remaining("kay")).toBe(10_000);
  });

  it("a reservation that never landed (the store failed open) settles the whole of what was used", async () => {
    // The store cannot be reached for the reservation, and is back for the settle.
    class DownForChecks extends MemoryStore {
      override check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
        return Promise.reject(new StoreUnavailableError("redis down"));
      }
    }
    store = new DownForChecks();
    const { app } = appWith(options({ policies: { ...tokens, failMode: "open" }, estimate: 3000 }), async (c) => {
      await c.get("rateLimit")!.settle(1000);
      return c.text("answer");
    });
    expect((await get(app, "lu")).status).toBe(200);
    expect(await remaining("lu")).toBe(9000);
  });
});
