import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { DurableObjectStore, type KeyLimiterNamespace } from "../../src/stores/durable-object.js";
import { uniqueKey } from "./helpers.js";

// A refund's spentAtMs through the Durable Object store (Limiter.debit): alone, carried with
// the key's next call (debitLater), and as the call a carried debit rides with.
const hourly = parsePolicy({ name: "hourly", algorithm: "fixed-window", limit: 100, period: "1h" }, "policy");
const namespace = env.LIMITER as unknown as KeyLimiterNamespace;
const HOUR_MS = 3_600_000;

describe("DurableObjectStore: refunds into the window they were spent in", () => {
  it("debit, debitLater and a debit a carried one rides with all pass spentAtMs on", async () => {
    const store = new DurableObjectStore(namespace, undefined, undefined, 10_000);
    const key = uniqueKey("spent-at");
    const reservedAtMs = Date.now();
    expect((await store.check(key, [hourly], { cost: 60, mode: "reject", maxWaitMs: 0 })).remaining).toBe(40);
    // Spent an hour ago: another window, nothing comes back.
    expect((await store.debit(key, [hourly], -30, reservedAtMs - HOUR_MS)).remaining).toBe(40);
    expect((await store.debit(key, [hourly], -30, reservedAtMs)).remaining).toBe(70);
    // Carried: held, then sent ahead of the next debit, which names a time too.
    const carried = store.debitLater(key, [hourly], -10, reservedAtMs - HOUR_MS);
    const next = await store.debit(key, [hourly], -10, reservedAtMs);
    expect([(await carried).remaining, next.remaining]).toEqual([70, 80]);
    await expect(store.debit(key, [hourly], -1, Number.NaN)).rejects.toThrow(/spentAtMs/);
  });
});
