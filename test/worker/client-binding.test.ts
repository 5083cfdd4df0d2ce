import { createExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  LeaseLostError,
  LimiterRequestError,
  LimiterUnavailableError,
  MaxWaitExceededError,
  type RemoteLimiter,
  STORE_UNAVAILABLE_PREFIX,
  bindingLimiter,
  createSemaphore,
  createThrottle,
  httpLimiter,
} from "../../src/client/index.js";
import type { Env } from "../../src/worker/env.js";
import { createWorker } from "../../src/worker/index.js";
import config from "../../spillway.config.json";
import { TOKEN, uniqueKey } from "./helpers.js";

// spillway/client inside workerd, against the Worker under test: bindingLimiter over its own
// loopback RPC binding, and httpLimiter over its default fetch handler (the /v1 API).

/**
 * Stamps are taken in this isolate when each answer (and then its timer) arrives, so two may
 * sit closer than their slots by the difference in how late their answers came: up to ~60 ms
 * in workerd on a loaded 2-core machine. Without the throttle the gaps would be about 0.
 */
const STAMP_JITTER_MS = 75;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** Settles to the error a promise rejects with (undefined if it resolves). */
const failureOf = (pending: Promise<unknown>) => pending.then(() => undefined, (error: unknown) => error);

const limiters: Array<[string, () => RemoteLimiter]> = [
  ["bindingLimiter (RPC)", () => bindingLimiter(exports.SpillwayRpc)],
  ["httpLimiter (fetch)", () => httpLimiter({ url: "http://spillway.test", token: TOKEN, fetch: (input, init) => exports.default.fetch(input, init) })],
];

for (const [name, makeLimiter] of limiters) {
  describe(`client over ${name}`, () => {
    it("throttle: sliding-log 2 per 300 ms lets 6 calls through in 3 windows, about 600 ms", async () => {
      const [limit, periodMs, calls] = [2, 300, 6];
      const throttle = createThrottle({ limiter: makeLimiter(), key: uniqueKey("throttle"), policy: { name: "pair", algorithm: "sliding-log", limit, period: periodMs } });
      const startsMs = (await Promise.all(Array.from({ length: calls }, () => throttle.wait().then(() => Date.now())))).sort((a, b) => a - b);
      const crowded = startsMs.slice(limit).map((startMs, index) => startMs - startsMs[index]!).filter((gapMs) => gapMs < periodMs - STAMP_JITTER_MS);
      expect(crowded).toEqual([]);
      const spanMs = startsMs.at(-1)! - startsMs[0]!;
      const minimumMs = (calls / limit - 1) * periodMs;
      expect(spanMs).toBeGreaterThanOrEqual(minimumMs - STAMP_JITTER_MS);
      expect(spanMs).toBeLessThanOrEqual(minimumMs * 1.2);
    });

    it("semaphore: acquire, refuse when full, extend past the original lease, release to the FIFO waiter", async () => {
      // Long enough that a loaded machine's slowness between acquire and extend stays inside it.
      const leaseMs = 1000;
      const semaphore = createSemaphore({ limiter: makeLimiter(), key: uniqueKey("semaphore"), policy: { name: "one", algorithm: "concurrency", limit: 1, lease: leaseMs }, maxWaitMs: 0 });
      const lease = await semaphore.acquire();
      expect(lease.leaseMs).toBe(leaseMs);
      expect(await failureOf(semaphore.acquire())).toBeInstanceOf(MaxWaitExceededError);

      const acquiredAtMs = Date.now();
      let grantedAtMs = 0;
      const waiting = semaphore.acquire({ maxWaitMs: 5000 }).then((next) => {
        grantedAtMs = Date.now();
        return next;
      });
      await sleep(150);
      await lease.extend(3000);
      // Past the original expiry: only the extension keeps the waiter out.
      await sleep(acquiredAtMs + leaseMs + 100 - Date.now());
      expect(Date.now() - acquiredAtMs).toBeGreaterThan(leaseMs);
      expect(grantedAtMs).toBe(0);
      const releasedAtMs = Date.now();
      expect(await lease.release()).toBe(true);
      const next = await waiting;
      expect(grantedAtMs).toBeGreaterThanOrEqual(releasedAtMs);
      expect(await next.release()).toBe(true);

      // Not extended in time: the store has let it go, and extend says so.
      const short = await semaphore.acquire({ leaseMs: 100 });
      await sleep(200);
      expect(await failureOf(short.extend())).toBeInstanceOf(LeaseLostError);
    });

    it("bad input → LimiterRequestError whose detail names the field", async () => {
      const limiter = makeLimiter();
      const unknown = await failureOf(createThrottle({ limiter, key: uniqueKey("bad"), policy: "no-such-policy" }).wait());
      expect(unknown).toBeInstanceOf(LimiterRequestError);
      expect(unknown).toMatchObject({ status: 404, detail: expect.stringMatching(/^policy: no policy named "no-such-policy"/) });
      // Only the server knows "per-minute" is a rate policy, not a semaphore's.
      const notConcurrency = await failureOf(createSemaphore({ limiter, key: uniqueKey("bad"), policy: "per-minute" }).acquire());
      expect(notConcurrency).toMatchObject({ name: "LimiterRequestError", status: 400, detail: expect.stringMatching(/^policy: "per-minute" is gcra/) });
      // The client allows longer waits than the server: the server's bound names the field.
      const tooLong = await failureOf(createSemaphore({ limiter, key: uniqueKey("bad"), policy: "concurrent" }).acquire({ maxWaitMs: 400_000 }));
      expect(tooLong).toMatchObject({ name: "LimiterRequestError", status: 400, detail: expect.stringMatching(/^maxWaitMs: /) });
    });
  });
}

describe("SpillwayRpc when its store is down", () => {
  // Each failure is a store-error log line (Workers Logs); here they are provoked on purpose.
  beforeAll(() => void vi.spyOn(console, "log").mockImplementation(() => {}));
  afterAll(() => vi.restoreAllMocks());
  // A real entrypoint whose Durable Object namespace fails every call, as an unreachable store would.
  const brokenNamespace = {
    getByName(): never {
      throw new Error("Durable Object storage unreachable");
    },
  };
  const env = { LIMITER: brokenNamespace, SPILLWAY_TOKEN: TOKEN } as unknown as Env;
  const rpc = new (createWorker(config).Rpc)(createExecutionContext(), env);

  it("answers a stable `store unavailable: ` message, which bindingLimiter maps to LimiterUnavailableError", async () => {
    const policy = { name: "strict", algorithm: "fixed-window" as const, limit: 5, period: "1s" };
    const raw = await failureOf(rpc.check({ key: uniqueKey("down"), policy }));
    expect((raw as Error).message).toBe(`${STORE_UNAVAILABLE_PREFIX}Durable Object call failed: Durable Object storage unreachable`);

    const throttle = createThrottle({ limiter: bindingLimiter(rpc), key: uniqueKey("down"), policy });
    const error = await failureOf(throttle.wait());
    expect(error).toBeInstanceOf(LimiterUnavailableError);
    expect((error as Error).message).toContain(STORE_UNAVAILABLE_PREFIX);
    const semaphore = createSemaphore({ limiter: bindingLimiter(rpc), key: uniqueKey("down"), policy: "concurrent" });
    expect(await failureOf(semaphore.acquire())).toBeInstanceOf(LimiterUnavailableError);
  });

  it("a failMode open policy still admits (the marker is for fail-closed answers only)", async () => {
    const decision = await rpc.check({ key: uniqueKey("down"), policy: { name: "lenient", limit: 5, period: "1s", failMode: "open" } });
    expect(decision).toMatchObject({ allowed: true, failedOpen: true });
  });
});
