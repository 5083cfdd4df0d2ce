import express, { type ErrorRequestHandler, type Request } from "express";
import { afterEach, describe, expect, it, vi } from "vitest";
import { StoreFaultError, StoreUnavailableError } from "../../src/limiter.js";
import { type NodeRateLimitOptions, rateLimit } from "../../src/node-middleware.js";
import { STORE_FAULT_TYPE, STORE_UNAVAILABLE_TYPE } from "../../src/rpc-errors.js";
import { CountingStore, type Listening, abortedGet, failingStore, gate, listen } from "./node-middleware-helpers.js";

const perMinute = { name: "per-minute", algorithm: "fixed-window", limit: 2, period: "1m" };
const slot = { name: "slot", algorithm: "concurrency", limit: 1 };
let store = new CountingStore();
let running: Listening | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  await store.close();
  store = new CountingStore();
});

const options = (overrides: Partial<NodeRateLimitOptions<Request>> = {}): NodeRateLimitOptions<Request> => ({
  store,
  policies: perMinute,
  key: (req: Request) => req.get("x-user"),
  log: () => {},
  ...overrides,
});

/** A real Express 5 app: the middleware on /api, a handler, and an error handler that shows what next(error) got. */
async function serve(middlewareOptions: NodeRateLimitOptions<Request>, handler: express.RequestHandler = (_req, res) => void res.send("ok")): Promise<string> {
  const app = express();
  app.use("/api", rateLimit(middlewareOptions));
  app.get("/api/x", handler);
  const showError: ErrorRequestHandler = (error: Error, _req, res, _next) => void res.status(500).json({ caught: error.message });
  app.use(showError);
  running = await listen(app);
  return `${running.url}/api/x`;
}
const get = (url: string, user?: string) => fetch(url, { headers: user ? { "x-user": user } : {} });

describe("spillway/node on Express 5", () => {
  it("adds RateLimit fields to admitted answers, then answers 429 with Retry-After and a quota-exceeded problem", async () => {
    const url = await serve(options());
    const first = await get(url, "ann");
    expect(first.status).toBe(200);
    expect(await first.text()).toBe("ok");
    expect(first.headers.get("ratelimit-policy")).toBe('"per-minute";q=2;w=60');
    expect(first.headers.get("ratelimit")).toMatch(/^"per-minute";r=1;t=\d+$/);
    expect(first.headers.get("retry-after")).toBeNull();
    await get(url, "ann");
    const denied = await get(url, "ann");
    expect(denied.status).toBe(429);
    expect(denied.headers.get("content-type")).toBe("application/problem+json");
    expect(denied.headers.get("retry-after")).toMatch(/^[1-9]\d*$/);
    expect(denied.headers.get("ratelimit")).toMatch(/^"per-minute";r=0;t=\d+$/);
    expect(await denied.json()).toMatchObject({
      type: "https://iana.org/assignments/http-problem-types#quota-exceeded",
      status: 429,
      "violated-policies": ["per-minute"],
    });
    expect((await get(url, "bob")).status).toBe(200);
  });

  it("answers 400 with a problem when the key function finds no key, and awaits an async one", async () => {
    const url = await serve(options({ key: async (req: Request) => req.get("x-user") }));
    const missing = await get(url);
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ status: 400, detail: "the request carries no rate-limit key" });
    expect((await get(url, "cat")).headers.get("ratelimit")).toMatch(/^"per-minute";r=1/);
  });

  it("passes an error thrown by the key function to next(error)", async () => {
    const url = await serve(options({ key: () => { throw new Error("no session store"); } }));
    const response = await get(url, "dee");
    expect(response.status).toBe(500);
    expect(await response.json()).toEqual({ caught: "no session store" });
  });

  it("delay admits a request after its slot's wait", async () => {
    const url = await serve(options({ policies: { name: "spaced", algorithm: "gcra", limit: 10, period: "1s", burst: 1 }, onLimit: "delay", maxDelayMs: 300 }));
    expect((await get(url, "eve")).status).toBe(200);
    const started = performance.now();
    const delayed = await get(url, "eve");
    expect(delayed.status).toBe(200);
    expect(await delayed.text()).toBe("ok");
    expect(performance.now() - started).toBeGreaterThanOrEqual(80);
  });

  it("holds a concurrency lease while the handler is busy and releases it once the response is sent", async () => {
    const received = gate();
    const busy = gate();
    const url = await serve(options({ policies: slot }), async (_req, res) => {
      received.open();
      await busy.opened;
      res.send("done");
    });
    const first = get(url, "fay");
    await received.opened;
    expect((await get(url, "fay")).status).toBe(429);
    expect(store.releases).toBe(0);
    busy.open();
    expect(await (await first).text()).toBe("done");
    await vi.waitFor(() => expect(store.releases).toBe(1));
    expect((await get(url, "fay")).status).toBe(200);
    await vi.waitFor(() => expect(store.releases).toBe(2));
  });

  it("releases the lease when the client goes away mid-request", async () => {
    const received = gate();
    const url = await serve(options({ policies: slot }), async (req, res) => {
      if (req.query.hold === undefined) return void res.send("ok");
      received.open();
      await new Promise((resolve) => res.on("close", resolve));
    });
    await abortedGet(`${url}?hold`, "gus", received.opened);
    await vi.waitFor(() => expect(store.releases).toBe(1));
    const next = await get(url, "gus");
    expect(next.status).toBe(200);
    await vi.waitFor(() => expect(store.releases).toBe(2));
  });

  it("fails closed with the 503 store-unavailable problem, never reaching the handler", async () => {
    let reached = false;
    const url = await serve(options({ store: failingStore(new StoreUnavailableError("redis timed out")) }), (_req, res) => {
      reached = true;
      res.send("ok");
    });
    const response = await get(url, "hal");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ type: STORE_UNAVAILABLE_TYPE, status: 503 });
    expect(reached).toBe(false);
  });

  it("fails open when every policy says so, and says it did", async () => {
    const url = await serve(options({ store: failingStore(new StoreUnavailableError("redis timed out")), policies: { ...perMinute, failMode: "open" } }));
    const response = await get(url, "ida");
    expect(response.status).toBe(200);
    expect(response.headers.get("spillway-failed-open")).toBe("true");
  });

  it("answers a store fault with 503 whatever the failMode", async () => {
    const url = await serve(options({ store: failingStore(new StoreFaultError("WRONGTYPE")), policies: { ...perMinute, failMode: "open" } }));
    const response = await get(url, "jay");
    expect(response.status).toBe(503);
    expect(await response.json()).toMatchObject({ type: STORE_FAULT_TYPE });
  });

  it("dry run never blocks and reports what enforcement would have done", async () => {
    const logs: Record<string, unknown>[] = [];
    const url = await serve(options({ dryRun: true, log: (entry) => logs.push(entry) }));
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await get(`${url}?token=secret`, "kim"));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    expect(answers[2]!.headers.get("spillway-dry-run")).toBe("denied");
    expect(answers[2]!.headers.get("retry-after")).toBeNull();
    // Logged under the app's whole path (not the part below the mount point), without its query.
    expect(logs).toEqual([expect.objectContaining({ event: "dry-run-deny", route: "/api/x", key: "kim" })]);
  });
});
