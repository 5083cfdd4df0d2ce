import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { StoreUnavailableError } from "../../src/core/limiter.js";
import { DurableObjectStore, type KeyLimiterNamespace } from "../../src/stores/durable-object.js";
import { uniqueKey } from "./helpers.js";

// DurableObjectStore.debitLater: a body's debit rides with the key's next call (one object
// request for both), or goes alone after carryMs. The metered object counts the requests.
const budget = parsePolicy({ name: "budget", algorithm: "fixed-window", limit: 100, period: "1h" }, "policy");
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const namespace = env.METERED_LIMITER as unknown as KeyLimiterNamespace;
const meterOf = (key: string) => env.METERED_LIMITER.getByName(key).meter();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("DurableObjectStore.debitLater", () => {
  it("rides with the key's next peek: one object request, and the peek sees the debit", async () => {
    const store = new DurableObjectStore(namespace, undefined, undefined, 10_000);
    const key = uniqueKey("carry");
    const landed = store.debitLater(key, [budget], 30);
    const peeked = await store.peek(key, [budget]);
    expect(peeked.remaining).toBe(70);
    expect((await landed).remaining).toBe(70);
    expect(await meterOf(key)).toMatchObject({ calls: 1, rowsWritten: 1 });
  });

  it("several held debits and a check: one request, one row, every debit counted", async () => {
    const store = new DurableObjectStore(namespace, undefined, undefined, 10_000);
    const key = uniqueKey("carry-many");
    const landed = [store.debitLater(key, [budget], 10), store.debitLater(key, [budget], 20)];
    const checked = await store.check(key, [budget], reject);
    expect(checked).toMatchObject({ allowed: true, remaining: 69 });
    expect((await Promise.all(landed)).map((decision) => decision.remaining)).toEqual([90, 70]);
    expect(await meterOf(key)).toMatchObject({ calls: 1, rowsWritten: 1 });
  });

  it("a settle of several measures (a cost per policy) rides with a check of costs per policy: one request for both, each policy its own", async () => {
    const store = new DurableObjectStore(namespace, undefined, undefined, 10_000);
    const key = uniqueKey("carry-costs");
    const [rpm, itpm, otpm] = ["rpm", "itpm", "otpm"].map((name) => parsePolicy({ name, algorithm: "fixed-window", limit: 100, period: "1h" }, "policy"));
    const stack = [rpm!, itpm!, otpm!];
    // The first request: 1 request, 40 input tokens reserved, output peeked.
    expect((await store.check(key, stack, { ...reject, costs: [1, 40, 0] })).policies.map((part) => part.remaining)).toEqual([99, 60, 100]);
    // Its answer: 30 input (10 back), 25 output; carried, then the next request's check.
    const landed = store.debitLater(key, stack, [0, -10, 25]);
    const checked = await store.check(key, stack, { ...reject, costs: { rpm: 1, itpm: 40, otpm: 0 } });
    expect(checked.policies.map((part) => part.remaining)).toEqual([98, 30, 75]);
    expect((await landed).policies.map((part) => part.remaining)).toEqual([99, 70, 75]);
    expect(await meterOf(key)).toMatchObject({ calls: 2 });
  });

  it("goes alone after carryMs when the key has no next call", async () => {
    const store = new DurableObjectStore(namespace, undefined, undefined, 20);
    const key = uniqueKey("alone");
    const startedMs = Date.now();
    expect((await store.debitLater(key, [budget], 5)).remaining).toBe(95);
    expect(Date.now() - startedMs).toBeGreaterThanOrEqual(20);
    expect(await meterOf(key)).toMatchObject({ calls: 1 });
    // Another store (another isolate) sees it.
    expect((await new DurableObjectStore(namespace).peek(key, [budget])).remaining).toBe(95);
  });

  it("a debit held for one key never rides with another key's call", async () => {
    const store = new DurableObjectStore(namespace, undefined, undefined, 30);
    const [key, other] = [uniqueKey("mine"), uniqueKey("other")];
    const landed = store.debitLater(key, [budget], 7);
    expect((await store.peek(other, [budget])).remaining).toBe(100);
    expect((await landed).remaining).toBe(93);
  });

  it("lands before a reset of its key, which then wipes it", async () => {
    const store = new DurableObjectStore(namespace, undefined, undefined, 10_000);
    const key = uniqueKey("reset");
    const landed = store.debitLater(key, [budget], 40);
    await store.reset(key, [budget]);
    expect((await landed).remaining).toBe(60);
    expect((await store.peek(key, [budget])).remaining).toBe(100);
  });

  it("refuses what debit refuses, at once", async () => {
    const store = new DurableObjectStore(namespace);
    const slot = parsePolicy({ name: "slot", algorithm: "concurrency", limit: 1 }, "policy");
    await expect(store.debitLater(uniqueKey(), [slot], 1)).rejects.toThrow(/mode/);
    // A negative cost is a refund now; what debit refuses is a cost that is no integer in range.
    await expect(store.debitLater(uniqueKey(), [budget], 1.5)).rejects.toThrow(/cost/);
    await expect(store.debitLater(uniqueKey(), [budget], [1, 2])).rejects.toMatchObject({ name: "ValidationError", field: "cost" });
  });

  it("rejects with StoreUnavailableError when the object cannot be reached, and so does the call it rode with", async () => {
    const broken: KeyLimiterNamespace = {
      getByName: () => {
        throw new Error("no object");
      },
    };
    const store = new DurableObjectStore(broken, { attempts: 1, baseDelayMs: 1, maxDelayMs: 1 }, undefined, 10_000);
    const key = uniqueKey();
    const landed = store.debitLater(key, [budget], 1);
    await expect(store.peek(key, [budget])).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(landed).rejects.toBeInstanceOf(StoreUnavailableError);
    await sleep(0);
  });
});
