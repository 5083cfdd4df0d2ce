import { afterEach, describe, expect, it } from "vitest";
import type { Policy } from "../../../src/core/types.js";
import { StoreFaultError } from "../../../src/core/limiter.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { policyOf } from "../core/core-helpers.js";

const START_MS = 1_700_000_000_000;
const once = { cost: 1, mode: "reject", maxWaitMs: 0 } as const;
const perHour = (name: string): Policy[] => [policyOf({ name, algorithm: "fixed-window", limit: 1, period: "1h" })];
const oneSlot: Policy[] = [policyOf({ name: "one-slot", algorithm: "concurrency", limit: 1, lease: "10m" })];

const stores: MemoryStore[] = [];
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

function storeOf(maxKeys: number): MemoryStore {
  const store = new MemoryStore({ maxKeys, clockMs: () => START_MS, sweepIntervalMs: 3_600_000 });
  stores.push(store);
  return store;
}

describe("MemoryStore bound counts (key, policy) states", () => {
  it("one key fed 5,000 policy names holds at most maxKeys states", async () => {
    const store = storeOf(10);
    for (let i = 0; i < 5000; i++) {
      expect((await store.check("one-key", perHour(`inline-${i}`), once)).allowed).toBe(true);
      expect(store.states).toBeLessThanOrEqual(10);
    }
    expect(store.size).toBe(1);
    expect(store.states).toBe(10);
    expect(store.evictions).toBe(5000 - 10);
    // The newest names are still counted; the oldest were evicted and start fresh.
    expect((await store.check("one-key", perHour("inline-4999"), once)).allowed).toBe(false);
    expect((await store.check("one-key", perHour("inline-0"), once)).allowed).toBe(true);
  });

  it("many keys with several policies each: the bound is on states, not keys", async () => {
    const store = storeOf(100);
    const stack = [...perHour("a"), ...perHour("b"), ...perHour("c")];
    for (let i = 0; i < 1000; i++) await store.check(`user-${i}`, stack, once);
    expect(store.states).toBeLessThanOrEqual(100);
    expect(store.size).toBe(33);
  });

  it("a key fed ever new names evicts its own states, not other keys'", async () => {
    const store = storeOf(40);
    for (let i = 0; i < 10; i++) await store.check(`quiet-${i}`, perHour("per-hour"), once);
    for (let i = 0; i < 2000; i++) await store.check("noisy", perHour(`inline-${i}`), once);
    // The quiet keys lost at most what the noisy key took before it held more than a stack.
    let kept = 0;
    for (let i = 0; i < 10; i++) if (!(await store.check(`quiet-${i}`, perHour("per-hour"), once)).allowed) kept++;
    expect(kept).toBe(10);
    expect(store.states).toBeLessThanOrEqual(40);
  });

  it("never evicts a state that holds a lease, and refuses when only such states are left", async () => {
    const store = storeOf(3);
    const lease = await store.acquire("k", oneSlot, { maxWaitMs: 0 });
    expect(lease.acquired).toBe(true);
    for (let i = 0; i < 100; i++) await store.check("k", perHour(`inline-${i}`), once);
    expect((await store.acquire("k", oneSlot, { maxWaitMs: 0 })).acquired).toBe(false);
    expect(store.states).toBe(3);

    const full = storeOf(1);
    expect((await full.acquire("k", oneSlot, { maxWaitMs: 0 })).acquired).toBe(true);
    await expect(full.check("k", perHour("other"), once)).rejects.toThrow(StoreFaultError);
    await expect(full.check("other-key", perHour("other"), once)).rejects.toThrow(/memory store is full/);
  });

  it("a stack needing more states than the bound is refused by name, never admitted", async () => {
    const store = storeOf(2);
    const stack = [...perHour("a"), ...perHour("b"), ...perHour("c")];
    await expect(store.check("k", stack, once)).rejects.toThrow(/holds at most 2 \(key, policy\) states, and this request needs 3 new ones/);
    expect(store.states).toBe(0);
  });
});
