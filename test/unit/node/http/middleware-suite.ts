import type { IncomingMessage, ServerResponse } from "node:http";
import { describe, expect, it, vi } from "vitest";
import { StoreFaultError, StoreUnavailableError } from "../../../../src/core/limiter.js";
import type { NodeRateLimitOptions } from "../../../../src/node-middleware.js";
import { STORE_FAULT_TYPE, STORE_UNAVAILABLE_TYPE } from "../../../../src/core/wire.js";
import { type Listening, abortedGet, failingStore, gate, perTest } from "./middleware-helpers.js";

export type RawHandler = (req: IncomingMessage, res: ServerResponse) => void | Promise<void>;

/**
 * How one host (Express, a bare node:http server) runs `rateLimit(options)` in front of
 * `handler` on a real server. `url` is where the suite sends its GETs (a query may be
 * added); whatever reaches next(error) is answered 500 with the JSON `{ caught: message }`.
 */
export type MountMiddleware = (options: NodeRateLimitOptions, handler: RawHandler) => Promise<Listening>;

const perMinute = { name: "per-minute", algorithm: "fixed-window", limit: 2, period: "1m" };
const slot = { name: "slot", algorithm: "concurrency", limit: 1 };
const ok: RawHandler = (_req, res) => void res.end("ok");
const get = (url: string, user: string) => fetch(url, { headers: { "x-user": user } });

/** What spillway/node promises on every host: run once per host, so the hosts cannot drift apart. */
export function nodeMiddlewareSuite(host: string, mount: MountMiddleware): void {
  describe(`spillway/node on ${host}: what every host gets`, () => {
    const current = perTest();

    const serve = async (overrides: Partial<NodeRateLimitOptions> = {}, handler = ok) => {
      const options: NodeRateLimitOptions = { store: current.store, policies: perMinute, key: (req) => req.headers["x-user"] as string | undefined, log: () => {}, ...overrides };
      current.running = await mount(options, handler);
      return current.running.url;
    };

    it("adds RateLimit fields to admitted answers, then answers 429 with Retry-After and a quota-exceeded problem", async () => {
      const url = await serve();
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

    it("delay admits a request after its slot's wait", async () => {
      // One slot every 500 ms: the second request comes well inside it even on a loaded machine.
      const url = await serve({ policies: { name: "spaced", algorithm: "gcra", limit: 2, period: "1s", burst: 1 }, onLimit: "delay", maxDelayMs: 1000 });
      // Measured from before the first decision (not after its response, which may come late):
      // the second cannot be admitted before the first's slot has passed, however slow the host.
      const started = performance.now();
      expect((await get(url, "eve")).status).toBe(200);
      const delayed = await get(url, "eve");
      expect(delayed.status).toBe(200);
      expect(await delayed.text()).toBe("ok");
      expect(performance.now() - started).toBeGreaterThanOrEqual(490);
    });

    it("holds a concurrency lease while the handler is busy and releases it once, when the response is sent", async () => {
      const received = gate();
      const busy = gate();
      const url = await serve({ policies: slot }, async (_req, res) => {
        received.open();
        await busy.opened;
        res.end("done");
      });
      const first = get(url, "fay");
      await received.opened;
      expect((await get(url, "fay")).status).toBe(429);
      expect(current.store.releases).toBe(0);
      busy.open();
      expect(await (await first).text()).toBe("done");
      await vi.waitFor(() => expect(current.store.releases).toBe(1));
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(current.store.releases).toBe(1);
      expect((await get(url, "fay")).status).toBe(200);
      await vi.waitFor(() => expect(current.store.releases).toBe(2));
    });

    it("releases the lease when the client goes away mid-request", async () => {
      const received = gate();
      const url = await serve({ policies: slot }, async (req, res) => {
        if (!req.url?.includes("hold")) return void res.end("ok");
        received.open();
        await new Promise((resolve) => res.on("close", resolve));
      });
      await abortedGet(`${url}?hold`, "gus", received.opened);
      await vi.waitFor(() => expect(current.store.releases).toBe(1));
      expect((await get(url, "gus")).status).toBe(200);
      await vi.waitFor(() => expect(current.store.releases).toBe(2));
    });

    it("fails closed with the 503 store-unavailable problem, never reaching the handler", async () => {
      let reached = false;
      const url = await serve({ store: failingStore(new StoreUnavailableError("redis timed out")) }, (_req, res) => {
        reached = true;
        res.end("ok");
      });
      const response = await get(url, "hal");
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ type: STORE_UNAVAILABLE_TYPE, status: 503 });
      expect(reached).toBe(false);
    });

    it("fails open when every policy says so, and says it did", async () => {
      const url = await serve({ store: failingStore(new StoreUnavailableError("redis timed out")), policies: { ...perMinute, failMode: "open" } });
      const response = await get(url, "ida");
      expect(response.status).toBe(200);
      expect(response.headers.get("spillway-failed-open")).toBe("true");
    });

    it("answers a store fault with 503 whatever the failMode", async () => {
      const url = await serve({ store: failingStore(new StoreFaultError("WRONGTYPE")), policies: { ...perMinute, failMode: "open" } });
      const response = await get(url, "jay");
      expect(response.status).toBe(503);
      expect(await response.json()).toMatchObject({ type: STORE_FAULT_TYPE });
    });

    it("hands any other error to next(error)", async () => {
      const url = await serve({ store: failingStore(new RangeError("a bug in a custom store")) });
      const response = await get(url, "gil");
      expect(response.status).toBe(500);
      expect(await response.json()).toEqual({ caught: "a bug in a custom store" });
    });
  });
}
