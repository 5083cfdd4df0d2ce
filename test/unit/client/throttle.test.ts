import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import type { CheckOptions, Decision, Policy } from "../../../src/core/types.js";
import { type Limiter, StoreUnavailableError } from "../../../src/core/limiter.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { LimiterUnavailableError, MaxWaitExceededError, createThrottle } from "../../../src/client/index.js";

// A sliding log of 1 s counts each admission until its end rounded up to 16 ms buckets
// (⌈1000 / 64⌉): the fake clock starts on that grid, so a slot 1 s on is 1008 ms on.
const slidingLog = (limit: number, period: number | string) => ({ name: "upstream", algorithm: "sliding-log" as const, limit, period });

/** A MemoryStore whose checks are counted (and can be slowed down, like a network). */
function countingStore(delayMs = 0): { store: MemoryStore; checks: CheckOptions[] } {
  const store = new MemoryStore();
  const checks: CheckOptions[] = [];
  const check = store.check.bind(store);
  store.check = async (key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> => {
    checks.push(options);
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    return check(key, policies, options);
  };
  return { store, checks };
}

describe("throttle with a fake clock", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 1_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("spaces calls to their slots with one round trip each and no polling", async () => {
    const { store, checks } = countingStore();
    const throttle = createThrottle({ limiter: store, key: "api", policy: slidingLog(2, 1000) });
    const startedAt: number[] = [];
    const calls = Array.from({ length: 5 }, (_, index) => throttle.run(() => startedAt.push(Date.now() - 1_000_000) && index));
    await vi.advanceTimersByTimeAsync(0);
    expect(startedAt).toEqual([0, 0]);
    // Three callers wait, each on one timer (plus the store's sweep interval).
    expect(vi.getTimerCount()).toBe(3 + 1);
    await vi.advanceTimersByTimeAsync(2016);
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3, 4]);
    expect(startedAt).toEqual([0, 0, 1008, 1008, 2016]);
    expect(checks).toHaveLength(5);
    expect(checks.every((check) => check.mode === "reserve" && check.cost === 1)).toBe(true);
  });

  it("throws MaxWaitExceededError with retryAfterMs when the slot is too far, consuming nothing", async () => {
    const store = new MemoryStore();
    const throttle = createThrottle({ limiter: store, key: "api", policy: slidingLog(1, 1000), maxWaitMs: 500 });
    await throttle.wait();
    const refused = await throttle.wait().catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(MaxWaitExceededError);
    expect(refused).toMatchObject({ retryAfterMs: 1008, maxWaitMs: 500 });
    // Nothing was booked: a call with a longer wait gets the very slot the refused one would have had.
    const ticket = throttle.wait({ maxWaitMs: 2000 });
    await vi.advanceTimersByTimeAsync(1008);
    expect((await ticket).waitedMs).toBe(1008);
  });

  it("refuses at once when the cost can never fit", async () => {
    const throttle = createThrottle({ limiter: new MemoryStore(), key: "api", policy: slidingLog(2, 1000) });
    await expect(throttle.wait({ cost: 3 })).rejects.toMatchObject({ name: "MaxWaitExceededError", retryAfterMs: null });
  });

  it("does not touch the limiter when the signal is already aborted", async () => {
    const { store, checks } = countingStore();
    const throttle = createThrottle({ limiter: store, key: "api", policy: slidingLog(1, 1000) });
    const reason = new Error("cancelled");
    await expect(throttle.wait({ signal: AbortSignal.abort(reason) })).rejects.toBe(reason);
    expect(checks).toHaveLength(0);
  });

  it("hands an aborted waiter's slot to the next caller instead of booking a new one", async () => {
    const { store, checks } = countingStore();
    const throttle = createThrottle({ limiter: store, key: "api", policy: slidingLog(1, 1000) });
    await throttle.wait();
    const controller = new AbortController();
    const aborted = throttle.wait({ signal: controller.signal });
    const abortedResult = aborted.catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(200);
    controller.abort(new Error("user left"));
    expect(await abortedResult).toMatchObject({ message: "user left" });

    await vi.advanceTimersByTimeAsync(100);
    const next = throttle.wait();
    await vi.advanceTimersByTimeAsync(708);
    const ticket = await next;
    expect(ticket).toMatchObject({ handedOver: true, waitedMs: 708 });
    expect(checks).toHaveLength(2);
    // The slot after it is the one after the aborted booking: nothing was lost or doubled.
    const third = throttle.wait();
    await vi.advanceTimersByTimeAsync(1008);
    expect(await third).toMatchObject({ handedOver: false, waitedMs: 1008 });
  });

  it("gives back a slot whose answer arrives after the abort", async () => {
    const { store, checks } = countingStore(50);
    const throttle = createThrottle({ limiter: store, key: "api", policy: slidingLog(1, 1000) });
    const first = throttle.wait();
    await vi.advanceTimersByTimeAsync(50);
    await first;
    const controller = new AbortController();
    const aborted = throttle.wait({ signal: controller.signal }).catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(10);
    controller.abort(new Error("gone"));
    await vi.advanceTimersByTimeAsync(50);
    expect(await aborted).toMatchObject({ message: "gone" });
    // The booking (the first ran at 50: at 1050 rounded up to 1056) went to a spare, not into thin air.
    const next = throttle.wait();
    await vi.advanceTimersByTimeAsync(1000);
    expect(await next).toMatchObject({ handedOver: true, waitedMs: 946 });
    expect(checks).toHaveLength(2);
  });

  it("drops a handed-over slot once its time has passed", async () => {
    const { store, checks } = countingStore();
    const throttle = createThrottle({ limiter: store, key: "api", policy: slidingLog(1, 1000) });
    await throttle.wait();
    const controller = new AbortController();
    const aborted = throttle.wait({ signal: controller.signal }).catch(() => undefined);
    controller.abort();
    await aborted;
    await vi.advanceTimersByTimeAsync(1500);
    const late = throttle.wait();
    await vi.advanceTimersByTimeAsync(1000);
    expect(await late).toMatchObject({ handedOver: false });
    expect(checks).toHaveLength(3);
  });

  it("pauses locally, and with shared: true every caller of the key", async () => {
    const store = new MemoryStore();
    const policy = { name: "upstream", algorithm: "gcra" as const, limit: 4, period: 1000 };
    const mine = createThrottle({ limiter: store, key: "api", policy });
    const theirs = createThrottle({ limiter: store, key: "api", policy });
    await mine.pause(1500);
    expect(mine.pausedUntilMs).toBe(1_001_500);
    const local = mine.wait();
    await vi.advanceTimersByTimeAsync(1500);
    expect(await local).toMatchObject({ waitedMs: 1500 });

    await mine.pause(2500, { shared: true });
    const other = theirs.wait({ maxWaitMs: 10_000 });
    await vi.advanceTimersByTimeAsync(10_000);
    const waitedMs = (await other).waitedMs;
    expect(waitedMs).toBeGreaterThanOrEqual(2500);
    expect(waitedMs).toBeLessThanOrEqual(2500 + 250);
  });

  it("holds a booked call through a pause that starts while it waits, within maxWaitMs", async () => {
    const throttle = createThrottle({ limiter: new MemoryStore(), key: "api", policy: slidingLog(1, 1000), maxWaitMs: 3000 });
    await throttle.wait();
    const held = throttle.wait();
    await vi.advanceTimersByTimeAsync(100);
    await throttle.pause(1900);
    await vi.advanceTimersByTimeAsync(3000);
    expect(await held).toMatchObject({ waitedMs: 2000 });

    await throttle.wait();
    const tooLong = throttle.wait().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(100);
    await throttle.pause(5000);
    await vi.advanceTimersByTimeAsync(1000);
    expect(await tooLong).toBeInstanceOf(MaxWaitExceededError);
  });

  it("wraps a function, keeping its arguments and result", async () => {
    const throttle = createThrottle({ limiter: new MemoryStore(), key: "api", policy: slidingLog(10, "1s") });
    const add = throttle.wrap(async (a: number, b: number) => a + b);
    await expect(add(2, 3)).resolves.toBe(5);
    expect(() => throttle.wrap(add, { cost: 0 })).toThrow(/^cost: must be an integer from 1/);
  });
});

describe("throttle errors", () => {
  it("names bad options at construction", () => {
    const limiter = new MemoryStore();
    const policy = slidingLog(1, 1000);
    expect(() => createThrottle({ limiter, key: "", policy })).toThrow(/^key: must be a string of 1 to 512 UTF-8 bytes, got ""/);
    expect(() => createThrottle({ limiter, key: "x".repeat(513), policy })).toThrow(TypeError);
    expect(() => createThrottle({ limiter, key: "api", policy, maxWaitMs: -1 })).toThrow(/^maxWaitMs: must be an integer from 0 to 2147483647, got -1/);
    expect(() => createThrottle({ limiter, key: "api", policy: { ...policy, limit: -1 } })).toThrow(/^policy\.limit: must be a positive integer/);
    expect(() => createThrottle({ limiter, key: "api", policy: "per-minute" })).toThrow(/^policy: a policy name needs a limiter that knows the config/);
    expect(() => createThrottle({ limiter, key: "api", policy: [policy, policy] })).toThrow(/^policy: stacks "upstream" twice/);
    expect(() => createThrottle({ limiter, key: "api", policy: { name: "c", algorithm: "concurrency", limit: 2 } })).toThrow(/use createSemaphore/);
    expect(() => createThrottle({ limiter: {} as Limiter, key: "api", policy })).toThrow(/^limiter: must be a Limiter/);
  });

  it("surfaces a store that is down as LimiterUnavailableError, never as a pass", async () => {
    const store = new MemoryStore();
    store.check = async () => {
      throw new StoreUnavailableError("redis: connection refused");
    };
    const throttle = createThrottle({ limiter: store, key: "api", policy: slidingLog(1, 1000) });
    const error = await throttle.wait().catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(LimiterUnavailableError);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/connection refused/);
  });

  it("lets a failMode: open policy through, and says so", async () => {
    const store = new MemoryStore();
    store.check = async () => {
      throw new StoreUnavailableError("down");
    };
    const throttle = createThrottle({ limiter: store, key: "api", policy: { ...slidingLog(1, 1000), failMode: "open" } });
    expect((await throttle.wait()).decision.failedOpen).toBe(true);
  });
});

describe("throttle on a real store and a real clock", () => {
  it("starts no call before its window, and none much later", async () => {
    const periodMs = 300;
    const throttle = createThrottle({ limiter: new MemoryStore(), key: "api", policy: slidingLog(3, periodMs) });
    // Slots are booked at or after startMs, so the k-th group of three cannot start before k periods later.
    const startMs = Date.now();
    // A timer due when the last group is: how late this process's timers fire right now.
    const probe = new Promise<number>((resolve) => setTimeout(() => resolve(Date.now() - startMs - 2 * periodMs), 2 * periodMs));
    const times = await Promise.all(Array.from({ length: 9 }, () => throttle.run(() => Date.now() - startMs)));
    const lateMs = Math.max(0, await probe);
    times.sort((a, b) => a - b);
    times.forEach((timeMs, index) => expect(timeMs).toBeGreaterThanOrEqual(Math.floor(index / 3) * periodMs));
    // The last group may start at 2 periods; a throttle that waited a whole period more would
    // start at 3. The bound sits between, plus however late the probe's timer fired (a loaded
    // machine delays the throttle's timers alike; it is not the throttle oversleeping).
    expect(times[8]!).toBeLessThan(2.5 * periodMs + lateMs);
  });
});
