import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import type { CheckOptions } from "../../../src/core/types.js";
import { LocalCache } from "../../../src/local/local-cache.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { FlakyStore } from "./local-cache-helpers.js";

const check: CheckOptions = { cost: 1, mode: "reject", maxWaitMs: 0 };

describe("LocalCache.debit", () => {
  it("goes to the store, and the deny cache then refuses without a store call until the debt is repaid", async () => {
    let nowMs = 1_000_000;
    const memory = new MemoryStore({ clockMs: () => nowMs });
    const store = new FlakyStore(memory, () => "ok");
    const cache = new LocalCache(store, { clockMs: () => nowMs });
    const hot = parsePolicy({ name: "hot", algorithm: "gcra", limit: 10, period: "1s", local: { share: 0 } }, "policy");

    const after = await cache.debit("k", [hot], 15);
    expect(after).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 600 });
    // The debit landed in the store (a peek there says so), not only here.
    expect(await memory.peek("k", [hot])).toMatchObject({ allowed: false, retryAfterMs: 600 });

    const callsBefore = store.calls;
    nowMs += 599;
    expect(await cache.check("k", [hot], check)).toMatchObject({ allowed: false, retryAfterMs: 1 });
    expect(store.calls).toBe(callsBefore);
    nowMs += 1;
    expect(await cache.check("k", [hot], check)).toMatchObject({ allowed: true });
    expect(store.calls).toBe(callsBefore + 1);
  });

  it("learns nothing for a policy without local, nor while the key still has room", async () => {
    let nowMs = 0;
    const store = new FlakyStore(new MemoryStore({ clockMs: () => nowMs }), () => "ok");
    const cache = new LocalCache(store, { clockMs: () => nowMs });
    const plain = parsePolicy({ name: "plain", algorithm: "fixed-window", limit: 2, period: "1s" }, "policy");
    const hot = parsePolicy({ name: "hot", algorithm: "fixed-window", limit: 5, period: "1s", local: { share: 0 } }, "policy");
    await cache.debit("k", [plain, hot], 3);
    const calls = store.calls;
    expect(await cache.check("k", [hot], check)).toMatchObject({ allowed: true, remaining: 1 });
    expect(store.calls).toBe(calls + 1);
    expect(await cache.check("k", [plain], check)).toMatchObject({ allowed: false });
    expect(store.calls).toBe(calls + 2);
  });
});

describe("LocalCache and block", () => {
  it("the deny cache serves a block, for every cost, without a store call until it ends", async () => {
    let nowMs = 5_000_000;
    const store = new FlakyStore(new MemoryStore({ clockMs: () => nowMs }), () => "ok");
    const cache = new LocalCache(store, { clockMs: () => nowMs });
    const boxed = parsePolicy({ name: "boxed", algorithm: "fixed-window", limit: 3, period: "1s", block: "10s", local: { share: 0 } }, "policy");
    expect(await cache.check("k", [boxed], { ...check, cost: 3 })).toMatchObject({ allowed: true });
    expect(await cache.check("k", [boxed], { ...check, cost: 2 })).toMatchObject({ allowed: false, blockedMs: 10_000, retryAfterMs: 10_000 });
    const calls = store.calls;
    nowMs += 4000; // the window refilled long ago; the block holds
    expect(await cache.check("k", [boxed], check)).toMatchObject({ allowed: false, blockedMs: 6000, retryAfterMs: 6000 });
    expect(store.calls).toBe(calls);
    nowMs += 6000;
    expect(await cache.check("k", [boxed], check)).toMatchObject({ allowed: true });
    expect(store.calls).toBe(calls + 1);
  });

  it("a refund that reopens the key ends the deny cache's denial, and the batch is not fooled into admitting more", async () => {
    const nowMs = 1_000_000;
    const memory = new MemoryStore({ clockMs: () => nowMs });
    const cache = new LocalCache(memory, { clockMs: () => nowMs });
    const hot = parsePolicy({ name: "hot", algorithm: "fixed-window", limit: 5, period: "1h", local: { share: 0 } }, "policy");
    await cache.debit("k", [hot], 5);
    expect(await cache.check("k", [hot], check)).toMatchObject({ allowed: false });
    expect(await cache.debit("k", [hot], -2)).toMatchObject({ allowed: true, remaining: 2 });
    // The two units given back are admitted, and no more: the store still decides.
    const answers = await Promise.all(Array.from({ length: 5 }, () => cache.check("k", [hot], check)));
    expect(answers.filter((answer) => answer.allowed)).toHaveLength(2);
    expect(await memory.peek("k", [hot])).toMatchObject({ remaining: 0 });
  });
});
