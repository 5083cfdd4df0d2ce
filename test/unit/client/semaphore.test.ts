import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { MemoryStore } from "../../../src/stores/memory.js";
import { LeaseLostError, MaxWaitExceededError, createSemaphore } from "../../../src/client/index.js";

const writers = (limit: number, lease: number | string = "30s") => ({ name: "writers", algorithm: "concurrency" as const, limit, lease });

describe("semaphore with a fake clock", () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: 5_000_000 });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it("grants leases in FIFO order among concurrent acquirers", async () => {
    const semaphore = createSemaphore({ limiter: new MemoryStore(), key: "db", policy: writers(2) });
    const held = [await semaphore.acquire(), await semaphore.acquire()];
    const order: number[] = [];
    const waiters = Array.from({ length: 6 }, (_, index) =>
      semaphore.acquire().then((lease) => {
        order.push(index);
        return lease;
      }),
    );
    await vi.advanceTimersByTimeAsync(0);
    expect(order).toEqual([]);
    // Each release lets exactly the next one in, in arrival order.
    for (let step = 0; step < 6; step++) {
      await held.shift()!.release();
      await vi.advanceTimersByTimeAsync(0);
      expect(order).toEqual(Array.from({ length: step + 1 }, (_, index) => index));
      held.push(await waiters[step]!);
    }
  });

  it("releases on `await using`, even when the block throws", async () => {
    const semaphore = createSemaphore({ limiter: new MemoryStore(), key: "db", policy: writers(1) });
    const failing = async () => {
      await using lease = await semaphore.acquire();
      expect(lease.released).toBe(false);
      throw new Error("work failed");
    };
    await expect(failing()).rejects.toThrow("work failed");
    const next = await semaphore.acquire({ maxWaitMs: 0 });
    expect(next.leaseId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await next.release()).toBe(true);
    expect(await next.release()).toBe(false);
  });

  it("gives a crashed holder's place back when its lease expires", async () => {
    const semaphore = createSemaphore({ limiter: new MemoryStore(), key: "db", policy: writers(1, 1000) });
    const crashed = await semaphore.acquire();
    expect(crashed.expiresAtMs).toBe(5_001_000);
    const waiting = semaphore.acquire({ maxWaitMs: 5000 });
    let granted = false;
    void waiting.then(() => (granted = true));
    await vi.advanceTimersByTimeAsync(999);
    expect(granted).toBe(false);
    await vi.advanceTimersByTimeAsync(2);
    expect(granted).toBe(true);
    expect(await crashed.release()).toBe(false);
    await expect(crashed.extend()).rejects.toBeInstanceOf(LeaseLostError);
  });

  it("extends a held lease while work runs", async () => {
    const semaphore = createSemaphore({ limiter: new MemoryStore(), key: "db", policy: writers(1, 1000) });
    const lease = await semaphore.acquire();
    const waiting = semaphore.acquire({ maxWaitMs: 5000 });
    let grantedAtMs = 0;
    void waiting.then(() => (grantedAtMs = Date.now()));
    await vi.advanceTimersByTimeAsync(800);
    await lease.extend(1000);
    expect(lease.expiresAtMs).toBe(5_001_800);
    await vi.advanceTimersByTimeAsync(1500);
    expect(grantedAtMs).toBeGreaterThanOrEqual(5_001_800);
    expect(grantedAtMs).toBeLessThanOrEqual(5_001_802);
    await expect(lease.extend()).rejects.toBeInstanceOf(LeaseLostError);
  });

  it("throws MaxWaitExceededError when no lease frees up in time", async () => {
    const semaphore = createSemaphore({ limiter: new MemoryStore(), key: "db", policy: writers(1, 1000), maxWaitMs: 100 });
    await semaphore.acquire();
    const refused = semaphore.acquire().catch((error: unknown) => error);
    await vi.advanceTimersByTimeAsync(100);
    const error = await refused;
    expect(error).toBeInstanceOf(MaxWaitExceededError);
    expect((error as MaxWaitExceededError).retryAfterMs).toBe(900);
  });

  it("gives back a lease granted after its waiter aborted", async () => {
    const semaphore = createSemaphore({ limiter: new MemoryStore(), key: "db", policy: writers(1) });
    const holder = await semaphore.acquire();
    const controller = new AbortController();
    const aborted = semaphore.acquire({ signal: controller.signal }).catch((error: unknown) => error);
    const patient = semaphore.acquire();
    controller.abort(new Error("not needed"));
    expect(await aborted).toMatchObject({ message: "not needed" });
    await holder.release();
    await vi.advanceTimersByTimeAsync(0);
    // The aborted waiter was first in line; its lease went straight back to the next one.
    const lease = await patient;
    expect(lease.released).toBe(false);
  });

  it("runs work under a lease and releases it", async () => {
    const semaphore = createSemaphore({ limiter: new MemoryStore(), key: "db", policy: writers(1) });
    await expect(semaphore.run(async (lease) => lease.leaseMs)).resolves.toBe(30_000);
    await expect(semaphore.acquire({ maxWaitMs: 0 })).resolves.toBeDefined();
  });
});

describe("semaphore options", () => {
  it("names bad options at construction", () => {
    const limiter = new MemoryStore();
    expect(() => createSemaphore({ limiter, key: "db", policy: { name: "rate", limit: 5, period: "1s" } })).toThrow(/^policy: a semaphore needs a concurrency policy, got "rate" \(gcra\)/);
    expect(() => createSemaphore({ limiter, key: "db", policy: writers(1), leaseMs: 0 })).toThrow(/^leaseMs: must be an integer from 1/);
    expect(() => createSemaphore({ limiter, key: "db", policy: writers(0) })).toThrow(/^policy\.limit/);
  });
});
