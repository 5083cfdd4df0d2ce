import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { AcquireResult } from "../../src/core/types.js";
import { RedisStore, type RedisStoreOptions } from "../../src/stores/redis/store.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const one = parsePolicy({ name: "one", algorithm: "concurrency", limit: 1, lease: "10s" }, "policy");
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("concurrency leases on Redis", () => {
  let server: RedisServer;
  let admin: Redis;
  const stores: RedisStore[] = [];
  /** A store with its own client; `pollIntervalMs` is long unless a test needs polls. */
  async function newStore(keyPrefix: string, options: Partial<RedisStoreOptions> = {}): Promise<RedisStore> {
    const store = new RedisStore({ url: server.url, keyPrefix, pollIntervalMs: 10_000, timeoutMs: 500, ...options });
    expect(await store.ready()).toBe(true);
    stores.push(store);
    return store;
  }

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    admin?.disconnect();
    await server?.stop();
  });

  it("serves waiters in FIFO order as leases are released, woken by pub/sub (no polling)", async () => {
    const store = await newStore("fifo:");
    const holder = await store.acquire("fifo", [one], { maxWaitMs: 0 });
    expect(holder.acquired).toBe(true);
    const order: number[] = [];
    const waits: Promise<void>[] = [];
    for (let index = 0; index < 5; index++) {
      waits.push(
        store.acquire("fifo", [one], { maxWaitMs: 5000 }).then(async (result) => {
          expect(result.acquired).toBe(true);
          order.push(index);
          await sleep(5);
          if (result.acquired) await store.release("fifo", [one], result.leaseId);
        }),
      );
      await sleep(15); // arrive in a known order
    }
    const begin = performance.now();
    if (holder.acquired) expect(await store.release("fifo", [one], holder.leaseId)).toEqual({ released: true });
    await Promise.all(waits);
    expect(order).toEqual([0, 1, 2, 3, 4]);
    // Five hand-overs with 5 ms holds: far below one 10 s poll interval.
    expect(performance.now() - begin).toBeLessThan(1000);
    const layout = keyLayout("fifo:", "fifo");
    expect(await admin.exists(layout.queueKey, layout.waitersKey)).toBe(0);
  });

  it("a check may not pass a waiter, and a newcomer without patience is refused", async () => {
    const store = await newStore("queue:");
    const holder = await store.acquire("queue", [one], { maxWaitMs: 0 });
    const waiting = store.acquire("queue", [one], { maxWaitMs: 5000 });
    await sleep(30);
    if (holder.acquired) await store.release("queue", [one], holder.leaseId);
    const check = await store.check("queue", [one], { cost: 1, mode: "reject", maxWaitMs: 0 });
    // Either the waiter already holds the lease, or it is queued for it: the check loses both ways.
    expect(check.allowed).toBe(false);
    const waited = await waiting;
    expect(waited.acquired).toBe(true);
    expect(await store.acquire("queue", [one], { maxWaitMs: 0 })).toMatchObject({ acquired: false });
  });

  it("gives up after maxWaitMs, answers retryAfterMs and leaves the queue", async () => {
    const store = await newStore("patience:");
    const short = parsePolicy({ name: "short", algorithm: "concurrency", limit: 1, lease: "3s" }, "policy");
    await store.acquire("patience", [short], { maxWaitMs: 0 });
    const begin = performance.now();
    const result = await store.acquire("patience", [short], { maxWaitMs: 200 });
    const tookMs = performance.now() - begin;
    expect(result.acquired).toBe(false);
    expect(tookMs).toBeGreaterThanOrEqual(195);
    expect(tookMs).toBeLessThan(400);
    if (!result.acquired) {
      expect(result.retryAfterMs).toBeGreaterThan(2500);
      expect(result.retryAfterMs).toBeLessThanOrEqual(3000);
    }
    const layout = keyLayout("patience:", "patience");
    expect(await admin.hlen(layout.waitersKey)).toBe(0);
  });

  it("a crashed holder's lease comes back when it expires, and the head takes it then", async () => {
    const crashed = await newStore("crash:");
    const survivor = await newStore("crash:");
    const brief = parsePolicy({ name: "brief", algorithm: "concurrency", limit: 1, lease: "300ms" }, "policy");
    expect((await crashed.acquire("crash", [brief], { maxWaitMs: 0 })).acquired).toBe(true);
    const begin = performance.now();
    // The holder never releases (its process "died"); the waiter polls only every 10 s,
    // so getting the lease at ~300 ms shows it timed its retry on the expiry.
    const result = await survivor.acquire("crash", [brief], { maxWaitMs: 3000 });
    const tookMs = performance.now() - begin;
    expect(result.acquired).toBe(true);
    expect(tookMs).toBeGreaterThan(250);
    expect(tookMs).toBeLessThan(600);
  });

  it("a crashed waiter drops out of the queue once it stops polling", async () => {
    const store = await newStore("ghost:", { pollIntervalMs: 50 });
    const layout = keyLayout("ghost:", "ghost");
    const [seconds, micros] = await admin.time();
    const serverNowMs = Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
    // A waiter from a process that died: queued first, never polls again.
    await admin.zadd(layout.queueKey, 1, "ghost-waiter");
    await admin.hset(layout.waitersKey, "ghost-waiter", `${serverNowMs + 300}|one`);
    const begin = performance.now();
    const result = await store.acquire("ghost", [one], { maxWaitMs: 3000 });
    const tookMs = performance.now() - begin;
    expect(result.acquired).toBe(true);
    expect(tookMs).toBeGreaterThan(250);
    expect(tookMs).toBeLessThan(800);
  });

  it("extend keeps a lease beyond its first expiry; release by an unknown id does nothing", async () => {
    const store = await newStore("extend:");
    const brief = parsePolicy({ name: "brief", algorithm: "concurrency", limit: 1, lease: "200ms" }, "policy");
    const held = await store.acquire("extend", [brief], { maxWaitMs: 0 });
    expect(held).toMatchObject({ acquired: true, leaseMs: 200, limit: 1, remaining: 0 });
    if (!held.acquired) return;
    expect(await store.extend("extend", [brief], held.leaseId, 2000)).toEqual({ extended: true, leaseMs: 2000 });
    expect(await store.extend("extend", [brief], "not-a-lease")).toEqual({ extended: false, leaseMs: 200 });
    expect(await store.release("extend", [brief], "not-a-lease")).toEqual({ released: false });
    const result = await store.acquire("extend", [brief], { maxWaitMs: 400 });
    expect(result.acquired).toBe(false);
    expect(await store.release("extend", [brief], held.leaseId)).toEqual({ released: true });
  });

  it("waiters in two stores (two processes' worth of clients) share one FIFO queue", async () => {
    const first = await newStore("shared:");
    const second = await newStore("shared:");
    const holder = await first.acquire("shared", [one], { maxWaitMs: 0 });
    const order: string[] = [];
    const waits: Promise<AcquireResult>[] = [];
    for (const [index, store] of [first, second, first, second].entries()) {
      const waiting = store.acquire("shared", [one], { maxWaitMs: 5000 });
      waits.push(
        waiting.then(async (result) => {
          order.push(`w${index}`);
          if (result.acquired) {
            await sleep(5);
            await store.release("shared", [one], result.leaseId);
          }
          return result;
        }),
      );
      await sleep(15);
    }
    if (holder.acquired) await first.release("shared", [one], holder.leaseId);
    const results = await Promise.all(waits);
    expect(results.every((result) => result.acquired)).toBe(true);
    expect(order).toEqual(["w0", "w1", "w2", "w3"]);
  });

  it("close ends every wait at once", async () => {
    const store = new RedisStore({ url: server.url, keyPrefix: "closing:", pollIntervalMs: 10_000 });
    expect(await store.ready()).toBe(true);
    await store.acquire("closing", [one], { maxWaitMs: 0 });
    const waiting = store.acquire("closing", [one], { maxWaitMs: 10_000 });
    await sleep(30);
    await store.close();
    expect(await waiting).toEqual({ acquired: false, retryAfterMs: null });
  });
});
