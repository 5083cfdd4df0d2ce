import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { LocalCache } from "../../src/local/local-cache.js";
import { DurableObjectStore } from "../../src/stores/durable-object.js";
import { FlakyStore } from "../unit/local/local-cache-helpers.js";

const one = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

describe("LocalCache in front of the real LimiterObject", () => {
  it("four caches sharing one Durable Object never admit more than its limit, with fewer calls than decisions", async () => {
    // A window of 366 days: the test cannot straddle two windows.
    const policy = parsePolicy({ name: "hot", algorithm: "fixed-window", limit: 50, period: "366d", local: { share: 0.5 } }, "policy");
    const store = new FlakyStore(new DurableObjectStore(env.LIMITER), () => "ok");
    const caches = Array.from({ length: 4 }, () => new LocalCache(store));
    let admitted = 0;
    let denied = 0;
    for (let round = 0; round < 20; round++) {
      const decisions = await Promise.all(Array.from({ length: 20 }, (_, i) => caches[i % 4]!.check("hot-key", [policy], one)));
      for (const decision of decisions) decision.allowed ? admitted++ : denied++;
    }
    expect(admitted).toBeLessThanOrEqual(50);
    expect(admitted).toBeGreaterThanOrEqual(50 - 4 * 25);
    expect(store.debitedUnits).toBeLessThanOrEqual(50);
    expect(admitted + denied).toBe(400);
    expect(store.calls).toBeLessThan(400 / 4);
    expect((await store.peek("hot-key", [policy])).remaining).toBe(50 - store.debitedUnits);
  });

  it("a denied key is answered from the deny cache", async () => {
    const policy = parsePolicy({ name: "hot", algorithm: "gcra", limit: 1, period: "366d", local: { share: 0 } }, "policy");
    const store = new FlakyStore(new DurableObjectStore(env.LIMITER), () => "ok");
    const cache = new LocalCache(store);
    expect((await cache.check("denied-key", [policy], one)).allowed).toBe(true);
    const first = await cache.check("denied-key", [policy], one);
    expect(first.allowed).toBe(false);
    const calls = store.calls;
    for (let i = 0; i < 50; i++) expect((await cache.check("denied-key", [policy], one)).allowed).toBe(false);
    expect(store.calls).toBe(calls);
  });
});
