import { describe, expect, it, vi } from "vitest";
import type { Policy } from "../../../../src/core/types.js";
import type { NodeRateLimitOptions } from "../../../../src/node-middleware.js";
import { perTest } from "./middleware-helpers.js";
import type { MountMiddleware, RawHandler } from "./middleware-suite.js";

// spillway/node's `count` and `cost` (docs/counting.md) on every host: peek before the
// handler, debit once the response has gone out. Run by the Express and node:http test files.
const three = { name: "three", algorithm: "fixed-window", limit: 3, period: "1h" };
const budget = { name: "budget", algorithm: "fixed-window", limit: 100, period: "1h" };
const THREE: Policy = { name: "three", algorithm: "fixed-window", limit: 3, periodMs: 3_600_000, burst: 3, leaseMs: 30_000, failMode: "closed" };
const BUDGET: Policy = { ...THREE, name: "budget", limit: 100, burst: 100 };
const remainingOf = (response: Response) => Number(/;r=(\d+)/.exec(response.headers.get("ratelimit") ?? "")?.[1]);

export function nodeMiddlewareCountingSuite(host: string, mount: MountMiddleware): void {
  describe(`spillway/node on ${host}: count and cost`, () => {
    const current = perTest();
    let hits = 0;
    const serve = async (overrides: Partial<NodeRateLimitOptions>, handler: RawHandler) => {
      hits = 0;
      const options: NodeRateLimitOptions = { store: current.store, policies: three, key: (req) => req.headers["x-user"] as string | undefined, log: () => {}, ...overrides };
      current.running = await mount(options, (req, res) => {
        hits++;
        return handler(req, res);
      });
      return current.running.url;
    };
    const get = (url: string, user: string, headers: Record<string, string> = {}) => fetch(url, { headers: { "x-user": user, ...headers } });
    const remaining = (user: string, policy: Policy) => current.store.peek(user, [policy]).then((decision) => decision.remaining);

    it("count: only failed answers are debited, once sent; then 429 without the handler", async () => {
      const url = await serve({ count: [401, 403] }, (req, res) => {
        res.statusCode = req.headers["x-password"] === "right" ? 200 : 401;
        res.end("done");
      });
      const passed = await get(url, "ann", { "x-password": "right" });
      expect([passed.status, remainingOf(passed)]).toEqual([200, 3]);
      for (let i = 0; i < 3; i++) {
        const failed = await get(url, "ann");
        expect(failed.status).toBe(401);
        // The head went out before the debit: it shows the state the request was let in on.
        expect(remainingOf(failed)).toBe(3 - i);
        await vi.waitFor(async () => expect(await remaining("ann", THREE)).toBe(2 - i));
      }
      const before = hits;
      const refused = await get(url, "ann", { "x-password": "right" });
      expect(refused.status).toBe(429);
      expect(hits).toBe(before);
    });

    it("count as a function, and cost.response read once the response is sent", async () => {
      const url = await serve({ policies: budget, count: (res) => res.statusCode === 200, cost: { response: (res) => Number(res.getHeader("x-tokens")) } }, (req, res) => {
        res.statusCode = req.headers["x-fail"] ? 500 : 200;
        res.setHeader("x-tokens", "70");
        res.end("ok");
      });
      await get(url, "bo", { "x-fail": "1" });
      await get(url, "bo");
      await vi.waitFor(async () => expect(await remaining("bo", BUDGET)).toBe(30));
      // 30 left lets the next one in; its 70 puts the key 40 into debt.
      expect((await get(url, "bo")).status).toBe(200);
      await vi.waitFor(async () => expect((await get(url, "bo")).status).toBe(429));
    });

    it("a client that leaves before the handler answers is still charged what the answer costs", async () => {
      let answered = 0;
      const url = await serve({ policies: budget, cost: { response: (res) => Number(res.getHeader("x-tokens")) } }, (_req, res) => {
        // An upstream call that outlives the client: the handler answers into the closed socket.
        setTimeout(() => {
          res.setHeader("x-tokens", "70");
          res.end("late");
          answered++;
        }, 300);
      });
      const leaving = new AbortController();
      const request = fetch(url, { headers: { "x-user": "cy" }, signal: leaving.signal }).catch(() => undefined);
      await vi.waitFor(() => expect(hits).toBe(1));
      leaving.abort();
      await request;
      await vi.waitFor(() => expect(answered).toBe(1));
      await vi.waitFor(async () => expect(await remaining("cy", BUDGET)).toBe(30));
    });

    it("cost.request and a constant are checked before the handler, at that cost", async () => {
      const url = await serve({ policies: budget, cost: { request: (req) => Number(req.headers["x-cost"]) } }, (_req, res) => void res.end("ok"));
      expect(remainingOf(await get(url, "cy", { "x-cost": "60" }))).toBe(40);
      expect((await get(url, "cy", { "x-cost": "41" })).status).toBe(429);
      expect(hits).toBe(1);
      await current.running!.close();
      const constant = await serve({ policies: budget, cost: 25 }, (_req, res) => void res.end("ok"));
      expect(remainingOf(await get(constant, "di"))).toBe(75);
    });

    it("a count function that throws after the response is logged; nothing crashes, nothing is debited", async () => {
      const logs: Record<string, unknown>[] = [];
      const url = await serve({ log: (entry) => logs.push(entry), count: () => { throw new RangeError("a bug in count"); } }, (_req, res) => void res.end("ok"));
      expect((await get(url, "fy")).status).toBe(200);
      await vi.waitFor(() => expect(logs).toMatchObject([{ event: "count-failed", error: "RangeError: a bug in count" }]));
      expect(await remaining("fy", THREE)).toBe(3);
    });

    it("a cost function's bad answer counts 1 and is logged, never a 500", async () => {
      const logs: Record<string, unknown>[] = [];
      const url = await serve({ policies: budget, log: (entry) => logs.push(entry), cost: { response: () => -5 } }, (_req, res) => void res.end("ok"));
      expect((await get(url, "ed")).status).toBe(200);
      await vi.waitFor(async () => expect(await remaining("ed", BUDGET)).toBe(99));
      expect(logs).toMatchObject([{ event: "usage-unusable", option: "cost.response", value: "-5", cost: 1 }]);
    });
  });
}
