import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { AcquireResult, Policy } from "../../src/core/types.js";
import { StoreUnavailableError } from "../../src/core/limiter.js";
import { hashSlot } from "../../src/stores/redis/nodes.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const LEASE_MS = 3000;
const five = parsePolicy({ name: "five", algorithm: "concurrency", limit: 5, lease: `${LEASE_MS}ms` }, "policy");
const perHour = parsePolicy({ name: "per-hour", algorithm: "fixed-window", limit: 3, period: "1h" }, "policy");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** One acquire: acquired, denied, or unavailable (while the reconnect is not verified yet). */
async function tryAcquire(store: RedisStore, key: string, policies: Policy[] = [five]): Promise<AcquireResult | "unavailable"> {
  try {
    return await store.acquire(key, policies, { maxWaitMs: 0 });
  } catch (error) {
    if (error instanceof StoreUnavailableError) return "unavailable";
    throw error;
  }
}

const resetLines = (logged: string[]) => logged.filter((line) => line.includes('"store-reset"'));

describe("Redis data loss is detected and fenced", () => {
  let server: RedisServer;
  const stores: RedisStore[] = [];
  async function newStore(logged: string[], dataCheckIntervalMs = 1000): Promise<RedisStore> {
    const store = new RedisStore({ url: server.url, timeoutMs: 200, dataCheckIntervalMs, log: (line) => logged.push(line) });
    expect(await store.ready()).toBe(true);
    stores.push(store);
    return store;
  }

  beforeAll(async () => {
    server = await startRedis();
  });
  afterEach(async () => {
    await Promise.all(stores.splice(0).map((store) => store.close()));
  });
  afterAll(async () => {
    await server?.stop();
  });

  it("a restart without persistence while 5 of 5 leases are held: no lease beyond the limit, one log line, the counter moves", async () => {
    const logged: string[] = [];
    const store = await newStore(logged);
    const held = await Promise.all(Array.from({ length: 5 }, () => store.acquire("api", [five], { maxWaitMs: 0 })));
    expect(held.every((lease) => lease.acquired)).toBe(true);
    expect((await store.acquire("api", [five], { maxWaitMs: 0 })).acquired).toBe(false);
    expect((await store.check("api", [perHour], { cost: 1, mode: "reject", maxWaitMs: 0 })).remaining).toBe(2);

    // Acquires keep coming from before the crash until well after the restart: some are in
    // flight the moment the connection is back, before anything else has run on it.
    const during: (AcquireResult | "unavailable")[] = [];
    const checks: boolean[] = [];
    let running = true;
    const worker = async () => {
      while (running) {
        during.push(await tryAcquire(store, "api"));
        const checked = await store.check("api", [five], { cost: 1, mode: "reject", maxWaitMs: 0 }).catch(() => undefined);
        if (checked) checks.push(checked.allowed);
        await sleep(1);
      }
    };
    const workers = Array.from({ length: 8 }, worker);
    await server.kill();
    await server.restart();
    const restartedMs = performance.now();
    while (performance.now() - restartedMs < LEASE_MS - 500) await sleep(50);
    running = false;
    await Promise.all(workers);
    expect(checks.filter((allowed) => allowed)).toHaveLength(0);
    expect(checks.length).toBeGreaterThan(10);
    expect(during.filter((result) => result !== "unavailable" && result.acquired)).toEqual([]);
    const denied = during.filter((result): result is AcquireResult => result !== "unavailable");
    expect(denied.length).toBeGreaterThan(10);
    expect(denied.every((result) => !result.acquired && result.retryAfterMs !== null && result.retryAfterMs > 0 && result.retryAfterMs <= LEASE_MS)).toBe(true);

    // Rate policies restart fresh: the window's count is gone with the data.
    expect((await store.check("api", [perHour], { cost: 1, mode: "reject", maxWaitMs: 0 })).remaining).toBe(2);
    expect(resetLines(logged)).toHaveLength(1);
    const line = JSON.parse(resetLines(logged)[0]!) as Record<string, unknown>;
    expect(line).toMatchObject({ spillway: true, event: "store-reset", store: "redis" });
    expect(String(line.reason)).toMatch(/restart without persistence/);
    expect(store.storeResets()).toBe(1);

    // One lease length after the detection, every old lease would have expired: five again, not six.
    await sleep(1000);
    const after = await Promise.all(Array.from({ length: 6 }, () => store.acquire("api", [five], { maxWaitMs: 0 })));
    expect(after.filter((lease) => lease.acquired)).toHaveLength(5);
    expect(resetLines(logged)).toHaveLength(1);
    expect(store.storeResets()).toBe(1);
  });

  it("FLUSHALL: the periodic check notices, logs once, counts, and fences; an acquire with maxWaitMs waits the fence out", async () => {
    const logged: string[] = [];
    const store = await newStore(logged, 100);
    const admin = new Redis(server.url);
    try {
      for (let i = 0; i < 5; i++) expect((await store.acquire("flushed", [five], { maxWaitMs: 0 })).acquired).toBe(true);
      await admin.flushall();
      const flushedMs = performance.now();
      while (store.storeResets() === 0 && performance.now() - flushedMs < 5000) await sleep(20);
      expect(store.storeResets()).toBe(1);
      expect(resetLines(logged)).toHaveLength(1);
      expect(JSON.parse(resetLines(logged)[0]!).reason).toMatch(/FLUSHALL/);
      const fenced = await store.acquire("flushed", [five], { maxWaitMs: 0 });
      expect(fenced.acquired).toBe(false);
      // A waiter is granted once the fence is over, within its maxWaitMs.
      const waited = await store.acquire("flushed", [five], { maxWaitMs: LEASE_MS + 2000 });
      expect(waited.acquired).toBe(true);
      expect(performance.now() - flushedMs).toBeGreaterThan(LEASE_MS - 500);
      expect(store.storeResets()).toBe(1);
    } finally {
      admin.disconnect();
    }
  });

  it("a second process sees the marker another one re-created, and fences too; a quiet restart-free run detects nothing", async () => {
    const first: string[] = [];
    const second: string[] = [];
    const a = await newStore(first, 100);
    const b = await newStore(second, 100);
    await sleep(400);
    expect([a.storeResets(), b.storeResets()]).toEqual([0, 0]);
    const admin = new Redis(server.url);
    await admin.flushall();
    admin.disconnect();
    const startMs = performance.now();
    while ((a.storeResets() === 0 || b.storeResets() === 0) && performance.now() - startMs < 5000) await sleep(20);
    expect([a.storeResets(), b.storeResets()]).toEqual([1, 1]);
    expect([resetLines(first).length, resetLines(second).length]).toEqual([1, 1]);
    expect((await tryAcquire(b, "other-key")) as AcquireResult).toMatchObject({ acquired: false });
  });

  it("hash slots match Redis Cluster's (CRC16 XMODEM of the hash tag)", () => {
    expect(hashSlot("123456789")).toBe(12739);
    expect(hashSlot("foo")).toBe(12182);
    expect(hashSlot("{user1000}.following")).toBe(hashSlot("user1000"));
    expect(hashSlot("foo{}{bar}")).toBe(hashSlot("foo{}{bar}"));
  });
});
