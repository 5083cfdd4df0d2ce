import express, { type ErrorRequestHandler, type Request } from "express";
import { describe, expect, it, vi } from "vitest";
import { type NodeRateLimitOptions, rateLimit } from "../../../../src/node-middleware.js";
import { parsePolicy } from "../../../../src/core/policy.js";
import { type Listening, listen, perTest } from "./middleware-helpers.js";

// spillway/node's `estimate` (docs/counting.md, "Reserve, then settle") on Express 5 and on a
// bare node:http server: reserved before the handler, settled by it with req.rateLimit.settle.
const tokens = { name: "tokens", algorithm: "token-bucket", limit: 10_000, period: "1m" };
const TOKENS = parsePolicy(tokens, "tokens");
const current = perTest();

type Handler = (req: Request, res: express.Response) => void | Promise<void>;

/** A real Express 5 app with express.json() before the middleware, so the estimate reads the body. */
async function mountExpress(overrides: Partial<NodeRateLimitOptions<Request>>, handler: Handler): Promise<string> {
  const app = express();
  app.use(express.json());
  app.use("/api", rateLimit<Request>({ store: current.store, policies: tokens, key: (req) => req.get("x-user"), log: () => {}, ...overrides }));
  app.post("/api/chat", (req, res, next) => void Promise.resolve(handler(req, res)).catch(next));
  const showError: ErrorRequestHandler = (error: Error, _req, res, _next) => void res.status(500).json({ caught: error.message });
  app.use(showError);
  current.running = await listen(app);
  return `${current.running.url}/api/chat`;
}

const chat = (url: string, user: string, body: Record<string, unknown>) => fetch(url, { method: "POST", headers: { "x-user": user, "content-type": "application/json" }, body: JSON.stringify(body) });
const remaining = (user: string) => current.store.peek(user, [TOKENS]).then((decision) => decision.remaining);
const maxTokens = (req: Request) => (req.body as { max_tokens?: number }).max_tokens ?? 0;

describe("spillway/node on Express 5: reserve, then settle", () => {
  it("20 at once, each reserving its max_tokens: 5 reach the handler, 15 get 429 before it", async () => {
    let hits = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const url = await mountExpress({ estimate: maxTokens }, async (req, res) => {
      hits++;
      await held;
      await req.rateLimit!.settle(2000);
      res.json({ usage: { total_tokens: 2000 } });
    });
    const answers = Array.from({ length: 20 }, () => chat(url, "ann", { max_tokens: 2000 }));
    await vi.waitFor(() => expect(hits).toBe(5));
    release();
    const statuses = (await Promise.all(answers)).map((response) => response.status);
    expect(statuses.filter((status) => status === 429)).toHaveLength(15);
    expect(hits).toBe(5);
    expect(await remaining("ann")).toBe(0);
  });

  it("the handler settles what the model used: unused units go back", async () => {
    const url = await mountExpress({ estimate: maxTokens }, async (req, res) => {
      expect(req.rateLimit?.estimate).toBe(4096);
      await req.rateLimit!.settle(1200);
      res.json({ ok: true });
    });
    expect((await chat(url, "bo", { max_tokens: 4096 })).status).toBe(200);
    expect(await remaining("bo")).toBe(8800);
  });

  it("a second settle throws; a handler that throws keeps its reservation", async () => {
    const url = await mountExpress({ estimate: 3000 }, async (req, res) => {
      if (req.body.fail) throw new Error("model down");
      await req.rateLimit!.settle(1000);
      await req.rateLimit!.settle(1000);
      res.json({ unreachable: true });
    });
    const twice = await chat(url, "cy", {});
    expect(await twice.json()).toEqual({ caught: "rateLimit: settle() was called twice for one request (first with 1000, now with 1000): a reservation settles once" });
    expect(await remaining("cy")).toBe(9000);
    expect((await chat(url, "cy", { fail: true })).status).toBe(500);
    expect(await remaining("cy")).toBe(6000);
  });

  it("cost.response settles once the response is sent, when the handler did not", async () => {
    const url = await mountExpress({ estimate: maxTokens, cost: { response: (res) => (res as express.Response).locals.tokens as number } }, (req, res) => {
      res.locals.tokens = 700;
      res.json({ usage: { total_tokens: 700 } });
    });
    expect((await chat(url, "di", { max_tokens: 3000 })).status).toBe(200);
    await vi.waitFor(async () => expect(await remaining("di")).toBe(9300));
  });
});

describe("spillway/node on a bare node:http server: reserve, then settle", () => {
  it("reserves the estimate, refuses what does not fit, settles with req.rateLimit", async () => {
    const limit = rateLimit({ store: current.store, policies: tokens, key: (req) => req.headers["x-user"] as string | undefined, estimate: (req) => Number(req.headers["x-estimate"]), log: () => {} });
    const running: Listening = await listen((req, res) => {
      void limit(req, res, () => {
        void req.rateLimit!.settle(Number(req.headers["x-used"])).then(() => res.end("ok"));
      });
    });
    current.running = running;
    const send = (estimate: number, used: number) => fetch(running.url, { headers: { "x-user": "ed", "x-estimate": String(estimate), "x-used": String(used) } });
    expect((await send(6000, 500)).status).toBe(200);
    expect(await remaining("ed")).toBe(9500);
    expect((await send(9600, 0)).status).toBe(429);
    expect(await remaining("ed")).toBe(9500);
  });
});
