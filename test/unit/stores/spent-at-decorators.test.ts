import { describe, expect, it, onTestFinished } from "vitest";
import type { Limiter } from "../../../src/core/limiter.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { LocalCache } from "../../../src/local/local-cache.js";
import { Notifier } from "../../../src/notify/notifier.js";
import { NotifyingLimiter } from "../../../src/notify/notifying-limiter.js";
import { observeLimiter } from "../../../src/observe/observed-limiter.js";
import { MemoryStore } from "../../../src/stores/memory.js";

// Limiter.debit's spentAtMs passes through every decorator in front of a store, on debit and
// debitNow: a refund of units spent in an earlier window gives nothing back, one of this
// window's does. A decorator that dropped it would refund the current window either way.
const hourly = parsePolicy({ name: "hourly", algorithm: "fixed-window", limit: 10, period: "1h" }, "policy");
const HOUR_MS = 3_600_000;
const notifier = () => new Notifier({ config: () => ({ url: "http://127.0.0.1:1/hook", events: ["warning"] as const }), claim: async () => true, send: () => {} });

const decorators: [string, (store: MemoryStore) => Limiter][] = [
  ["the store itself", (store) => store],
  ["LocalCache", (store) => new LocalCache(store)],
  ["observeLimiter", (store) => observeLimiter(store, {}, "test")],
  ["NotifyingLimiter", (store) => new NotifyingLimiter(store, notifier())],
];

describe("spentAtMs through the Limiter decorators", () => {
  it.each(decorators)("%s", async (_name, wrap) => {
    const store = new MemoryStore();
    onTestFinished(() => store.close());
    const limiter = wrap(store);
    const spentAtMs = Date.now();
    await limiter.check("k", [hourly], { cost: 10, mode: "reject", maxWaitMs: 0 });
    expect((await limiter.debit("k", [hourly], -4, spentAtMs - HOUR_MS)).remaining).toBe(0);
    expect((await limiter.debit("k", [hourly], -4, spentAtMs)).remaining).toBe(4);
    // LocalCache changes debit, so it has no debitNow (Limiter.debitNow): the others forward it.
    expect(limiter.debitNow === undefined).toBe(limiter instanceof LocalCache);
    if (!limiter.debitNow) return;
    expect(limiter.debitNow("k", [hourly], -2, spentAtMs - HOUR_MS).remaining).toBe(4);
    expect(limiter.debitNow("k", [hourly], -2, spentAtMs).remaining).toBe(6);
  });
});
