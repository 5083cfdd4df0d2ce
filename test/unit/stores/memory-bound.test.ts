import { afterEach, describe, expect, it } from "vitest";
import type { Policy } from "../../../src/core/types.js";
import { StoreFaultError } from "../../../src/core/limiter.js";
import { DEFAULT_MEMORY_MAX_KEYS, MemoryStore } from "../../../src/stores/memory.js";
import { policyOf } from "../core/core-helpers.js";

const START_MS = 1_700_000_000_000;
const perHour: Policy[] = [policyOf({ name: "per-hour", algorithm: "sliding-window", limit: 1, period: "1h" })];
const perSecond: Policy[] = [policyOf({ name: "per-second", algorithm: "gcra", limit: 1, period: "1s" })];
const oneSlot: Policy[] = [policyOf({ name: "one-slot", algorithm: "concurrency", limit: 1, lease: "10m" })];
const once = { cost: 1, mode: "reject", maxWaitMs: 0 } as const;

const stores: MemoryStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** A store on an injected clock; the sweep timer never fires during a test. */
function storeOf(maxKeys: number) {
  const clock = { nowMs: START_MS };
  const store = new MemoryStore({ maxKeys, clockMs: () => clock.nowMs, sweepIntervalMs: 3_600_000 });
  stores.push(store);
  return { store, clock };
}

const allowed = async (store: MemoryStore, key: string, policies = perHour) => (await store.check(key, policies, once)).allowed;

describe("MemoryStore bound", () => {
  it("validates maxKeys, naming the option", () => {
    for (const bad of [0, -1, 1.5, Number.NaN, Number.POSITIVE_INFINITY, "100", null]) {
      expect(() => new MemoryStore({ maxKeys: bad as number })).toThrow(/^MemoryStore: maxKeys must be a positive integer, got /);
    }
    expect(new MemoryStore().maxKeys).toBe(DEFAULT_MEMORY_MAX_KEYS);
    expect(new MemoryStore({ maxKeys: 1 }).maxKeys).toBe(1);
  });

  it("holds at most maxKeys under a flood of distinct keys, counts evictions, and keeps a hot key's state", async () => {
    const { store } = storeOf(1000);
    expect(await allowed(store, "hot")).toBe(true);
    for (let i = 0; i < 50_000; i++) {
      await store.check(`flood:${i}`, perHour, once);
      // The limited key keeps being denied while the flood goes on: it is never forgotten.
      if (i % 100 === 0) expect(await allowed(store, "hot")).toBe(false);
    }
    expect(store.size).toBe(1000);
    expect(store.evictions).toBe(50_001 - 1000);
    expect(await allowed(store, "hot")).toBe(false);
    // An evicted key starts fresh: its hour's allowance is back.
    expect(await allowed(store, "flood:0")).toBe(true);
    expect(await allowed(store, "flood:49999")).toBe(false);
  });

  it("evicts the least recently used key", async () => {
    const { store } = storeOf(2);
    await store.check("a", perHour, once);
    await store.check("b", perHour, once);
    await store.check("a", perHour, once);
    await store.check("c", perHour, once);
    expect(store.evictions).toBe(1);
    expect(await allowed(store, "a")).toBe(false);
    expect(await allowed(store, "c")).toBe(false);
    expect(await allowed(store, "b")).toBe(true);
  });

  it("evicts a key that is already fresh before one that still counts", async () => {
    const { store, clock } = storeOf(3);
    await store.check("first", perHour, once);
    await store.check("second", perHour, once);
    await store.check("short", perSecond, once);
    clock.nowMs += 2000;
    await store.check("new", perHour, once);
    expect(store.evictions).toBe(1);
    // "first" is the least recently used, but "short" is fresh again: it goes instead.
    expect(await allowed(store, "first")).toBe(false);
    expect(await allowed(store, "second")).toBe(false);
  });

  it("sweeps fresh keys away without counting them as evictions, and keeps the recency order of the rest", async () => {
    const { store, clock } = storeOf(3);
    await store.check("short-1", perSecond, once);
    await store.check("kept", perHour, once);
    await store.check("short-2", perSecond, once);
    clock.nowMs += 2000;
    store.sweep();
    expect(store.size).toBe(1);
    expect(store.evictions).toBe(0);
    await store.check("x", perHour, once);
    await store.check("y", perHour, once);
    await store.check("z", perHour, once);
    expect(store.evictions).toBe(1);
    expect(await allowed(store, "x")).toBe(false);
    expect(await allowed(store, "kept")).toBe(true);
  });

  it("never evicts a key holding a lease", async () => {
    const { store } = storeOf(100);
    const lease = await store.acquire("leased", oneSlot, { maxWaitMs: 0 });
    expect(lease.acquired).toBe(true);
    for (let i = 0; i < 1000; i++) await store.check(`flood:${i}`, perHour, once);
    expect(store.size).toBe(100);
    // Still held: a forgotten lease would hand its slot out twice.
    expect((await store.acquire("leased", oneSlot, { maxWaitMs: 0 })).acquired).toBe(false);
    expect(await store.release("leased", oneSlot, lease.acquired ? lease.leaseId : "")).toEqual({ released: true });
  });

  it("refuses a new key with a StoreFaultError when every key holds a lease, and takes new keys again once one is freed", async () => {
    const { store, clock } = storeOf(2);
    const a = await store.acquire("a", oneSlot, { maxWaitMs: 0 });
    const b = await store.acquire("b", oneSlot, { maxWaitMs: 0 });
    if (!a.acquired || !b.acquired) throw new Error("leases expected");
    await expect(store.check("c", perHour, once)).rejects.toThrow(StoreFaultError);
    await expect(store.check("c", perHour, once)).rejects.toThrow(/memory store is full: all 2 \(key, policy\) states belong to keys that hold leases/);
    await expect(store.acquire("c", oneSlot, { maxWaitMs: 0 })).rejects.toThrow(StoreFaultError);
    // Known keys still decide, and a peek needs no room.
    expect((await store.acquire("a", oneSlot, { maxWaitMs: 0 })).acquired).toBe(false);
    expect((await store.peek("c", perHour)).allowed).toBe(true);
    expect(store.size).toBe(2);

    await store.release("a", oneSlot, a.leaseId);
    expect((await store.acquire("c", oneSlot, { maxWaitMs: 0 })).acquired).toBe(true);
    expect(store.evictions).toBe(1);
    expect((await store.acquire("b", oneSlot, { maxWaitMs: 0 })).acquired).toBe(false);

    // Leases that run out free their keys too.
    await expect(store.check("d", perHour, once)).rejects.toThrow(StoreFaultError);
    clock.nowMs += 10 * 60_000 + 1;
    expect(await allowed(store, "d")).toBe(true);
  });
});
