import { createExecutionContext } from "cloudflare:test";
import { exports } from "cloudflare:workers";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import {
  LeaseLostError,
  LimiterRequestError,
  LimiterUnavailableError,
  MaxWaitExceededError,
  type RemoteLimiter,
  type Throttle,
  STORE_UNAVAILABLE_PREFIX,
  bindingLimiter,
  createSemaphore,
  createThrottle,
  httpLimiter,
} from "../../src/client/index.js";
import type { Decision } from "../../src/core/types.js";
import type { Env } from "../../src/worker/env.js";
import { createWorker } from "../../src/worker/index.js";
import config from "../../spillway.config.json";
import { TOKEN, uniqueKey } from "./helpers.js";

// spillway/client inside workerd, against the Worker under test: bindingLimiter over its own
// loopback RPC binding, and httpLimiter over its default fetch handler (the /v1 API).

/**
 * One throttled call, stamped in this isolate. The store books its slot after the call is made and
 * before its answer arrives here, so the slot lies in [earliestSlotMs, latestSlotMs]: the two stamps
 * plus the wait it booked. On a loaded 2-core machine answers come late by different amounts per
 * call (200 ms and more in workerd), so this measured interval, not a fixed jitter, bounds the slot.
 */
interface ThrottledCall {
  earliestSlotMs: number;
  latestSlotMs: number;
  startMs: number;
}

/** The limiter, noting when each check's answer reaches this isolate (the throttle hands the same Decision on). */
function notingAnswers(limiter: RemoteLimiter, answeredMs: WeakMap<Decision, number>): RemoteLimiter {
  return {
    ...limiter,
    async check(...args) {
      const decision = await limiter.check(...args);
      answeredMs.set(decision, Date.now());
      return decision;
    },
  };
}

async function throttledCall(throttle: Throttle, answeredMs: WeakMap<Decision, number>): Promise<ThrottledCall> {
  const calledMs = Date.now();
  const { decision } = await throttle.wait();
  const startMs = Date.now();
  return { earliestSlotMs: calledMs + decision.waitMs, latestSlotMs: answeredMs.get(decision)! + decision.waitMs, startMs };
}

/** How often timerLateness looks: a stall shows there up to one tick less than it delays another timer. */
const TIMER_TICK_MS = 5;

/** Watches this isolate's timers: the most any fired late (an event loop stalled by a loaded machine). */
function timerLateness(): { stop: () => number } {
  let worstMs = 0;
  let stopped = false;
  const tick = (dueMs: number) =>
    setTimeout(() => {
      worstMs = Math.max(worstMs, Date.now() - dueMs);
      if (!stopped) tick(Date.now() + TIMER_TICK_MS);
    }, TIMER_TICK_MS);
  tick(Date.now() + TIMER_TICK_MS);
  return {
    stop: () => {
      stopped = true;
      return worstMs;
    },
  };
}

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
      const [limit, periodMs, count] = [2, 300, 6];
      const answeredMs = new WeakMap<Decision, number>();
      const limiter = notingAnswers(makeLimiter(), answeredMs);
      const throttle = createThrottle({ limiter, key: uniqueKey("throttle"), policy: { name: "pair", algorithm: "sliding-log", limit, period: periodMs } });
      const lateness = timerLateness();
      const calls = (await Promise.all(Array.from({ length: count }, () => throttledCall(throttle, answeredMs)))).sort((a, b) => a.startMs - b.startMs);
      const stalledMs = lateness.stop();
      // No call starts before its slot as its answer told it.
      expect(calls.filter((call) => call.startMs < call.latestSlotMs)).toEqual([]);
      // Half-open windows: any limit+1 slots span a whole period. Measured from what bounds them, the
      // latest start and the earliest slot any of them may have: a double booking is off by a period.
      const crowded = calls
        .slice(limit)
        .map((last, index) => last.startMs - Math.min(...calls.slice(index, index + limit + 1).map((call) => call.earliestSlotMs)))
        .filter((spanMs) => spanMs < periodMs);
      expect(crowded).toEqual([]);
      // As fast as the policy allows: the last slot lies minimumMs after the first answer (which the
      // first start follows), plus however late its own request may have been booked; its start
      // follows its slot by how late this isolate's timers fired. All measured: oversleeping is not excused.
      const spanMs = calls.at(-1)!.startMs - calls[0]!.startMs;
      const minimumMs = (count / limit - 1) * periodMs;
      const last = calls.at(-1)!;
      expect(spanMs).toBeLessThanOrEqual(minimumMs + (last.latestSlotMs - last.earliestSlotMs) + stalledMs + TIMER_TICK_MS);
      expect(last.startMs - Math.min(...calls.map((call) => call.earliestSlotMs))).toBeGreaterThanOrEqual(minimumMs);
    });

    it("semaphore: acquire, refuse when full, extend past the original lease, release to the FIFO waiter", async () => {
      const leaseMs = 1000;
      // Longer than any stall between extending and releasing: the release, not the clock, ends these.
      const [extendedMs, patienceMs] = [10_000, 10_000];
      let attempt = 0;
      for (;;) {
        attempt++;
        const policy = { name: "one", algorithm: "concurrency" as const, limit: 1, lease: leaseMs };
        const semaphore = createSemaphore({ limiter: makeLimiter(), key: uniqueKey("semaphore"), policy, maxWaitMs: 0 });
        // The lease starts after this and is granted before acquire returns.
        const acquiringMs = Date.now();
        const lease = await semaphore.acquire();
        const acquiredAtMs = Date.now();
        expect(lease.leaseMs).toBe(leaseMs);
        expect(await failureOf(semaphore.acquire())).toBeInstanceOf(MaxWaitExceededError);

        let grantedAtMs = 0;
        const waiting = semaphore.acquire({ maxWaitMs: patienceMs }).then((next) => {
          grantedAtMs = Date.now();
          return next;
        });
        // Queued before the extension, so the extension must move the expiry the waiter is woken by.
        await sleep(150);
        const lost = await failureOf(lease.extend(extendedMs));
        if (lost !== undefined) {
          // Lost is right only if the extension may have come after the lease ran out: a loaded machine
          // can take leaseMs over the steps in between. That attempt proves nothing; a new key tries again.
          expect(lost).toBeInstanceOf(LeaseLostError);
          expect(Date.now() - acquiringMs).toBeGreaterThan(leaseMs);
          expect(attempt, "attempts whose extension came too late").toBeLessThan(3);
          expect(await (await waiting).release()).toBe(true);
          continue;
        }
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
        return;
      }
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
