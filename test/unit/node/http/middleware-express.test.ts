import express, { type ErrorRequestHandler, type Request } from "express";
import { describe, expect, it } from "vitest";
import { type NodeRateLimitOptions, rateLimit } from "../../../../src/node-middleware.js";
import { type Listening, listen, perTest } from "./middleware-helpers.js";
import { type RawHandler, nodeMiddlewareSuite } from "./middleware-suite.js";
import { nodeMiddlewareCountingSuite } from "./middleware-counting-suite.js";

const perMinute = { name: "per-minute", algorithm: "fixed-window", limit: 2, period: "1m" };
const current = perTest();

const options = (overrides: Partial<NodeRateLimitOptions<Request>> = {}): NodeRateLimitOptions<Request> => ({
  store: current.store,
  policies: perMinute,
  key: (req: Request) => req.get("x-user"),
  log: () => {},
  ...overrides,
});

/** A real Express 5 app: the middleware on /api, a handler, and an error handler that shows what next(error) got. */
const mountExpress = async (middlewareOptions: NodeRateLimitOptions<Request>, handler: express.RequestHandler | RawHandler): Promise<Listening> => {
  const app = express();
  app.use("/api", rateLimit(middlewareOptions));
  app.get("/api/x", handler);
  const showError: ErrorRequestHandler = (error: Error, _req, res, _next) => void res.status(500).json({ caught: error.message });
  app.use(showError);
  const listening = await listen(app);
  return { url: `${listening.url}/api/x`, close: listening.close };
};

nodeMiddlewareSuite("Express 5", mountExpress);
nodeMiddlewareCountingSuite("Express 5", mountExpress);

async function serve(middlewareOptions: NodeRateLimitOptions<Request>, handler: express.RequestHandler = (_req, res) => void res.send("ok")): Promise<string> {
  current.running = await mountExpress(middlewareOptions, handler);
  return current.running.url;
}
const get = (url: string, user?: string) => fetch(url, { headers: user ? { "x-user": user } : {} });

describe("spillway/node on Express 5", () => {
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
