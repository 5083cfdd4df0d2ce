import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import { storePolicies } from "../../../src/core/store-policies.js";
import type { Policy } from "../../../src/core/types.js";
import { MemoryStore } from "../../../src/stores/memory.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

/** What plain JavaScript can hand a store: the types say Policy, the value says otherwise. */
function unchecked(...values: unknown[]): Policy[] {
  return values as Policy[];
}

describe("storePolicies", () => {
  it("answers the same array for parsed policies (stores cache by its identity)", () => {
    const policies = [parsePolicy({ name: "a", limit: 2, period: "1s" }, "policy")];
    expect(storePolicies(policies)).toBe(policies);
    expect(storePolicies(policies)).toBe(policies);
  });

  it("parses a policy written as in a config, once per object", () => {
    const written = { name: "per-minute", limit: 2, period: "1m" };
    const first = storePolicies(unchecked(written));
    expect(first[0]).toEqual(parsePolicy(written, "policy"));
    expect(storePolicies(unchecked(written))[0]).toBe(first[0]);
  });

  it.each([
    ["not an array", { name: "a", limit: 1, period: "1s" }, /^policies: must be an array of policies/],
    ["an empty stack", [], /^policies: must name at least one policy/],
    ["null", [null], /^policies\.0: must be a policy object, got null/],
    ["a bad written limit", [{ name: "a", limit: -1, period: "1m" }], /^policies\.0\.limit: must be a positive integer/],
    ["an unknown written field", [{ name: "a", limit: 1, period: "1m", perod: "1s" }], /^policies\.0\.perod: is not a known field/],
    ["a written policy without period", [{ name: "a", limit: 1 }], /^policies\.0\.period: is required for gcra/],
    ["periodMs as text", [{ name: "a", algorithm: "gcra", limit: 2, periodMs: "1m", burst: 2, leaseMs: 1, failMode: "closed" }], /^policies\.0\.periodMs: must be a whole number of ms/],
    ["a resolved policy missing its burst", [{ name: "a", algorithm: "gcra", limit: 2, periodMs: 60_000, leaseMs: 1, failMode: "closed" }], /^policies\.0\.burst: must be an integer/],
    ["an unknown algorithm", [{ name: "a", algorithm: "leaky", limit: 2, periodMs: 1000, burst: 2, leaseMs: 1, failMode: "closed" }], /^policies\.0\.algorithm: must be one of/],
    ["a bad failMode", [{ name: "a", algorithm: "gcra", limit: 2, periodMs: 1000, burst: 2, leaseMs: 1, failMode: "maybe" }], /^policies\.0\.failMode: must be "open" or "closed"/],
  ])("refuses %s with a TypeError naming the field", (_, value, message) => {
    expect(() => storePolicies(value as Policy[])).toThrow(TypeError);
    expect(() => storePolicies(value as Policy[])).toThrow(message);
  });
});

describe("MemoryStore given policies from plain JavaScript", () => {
  it("limits a policy written as in a config: 2 of 100 admitted with limit 2", async () => {
    const store = new MemoryStore();
    let admitted = 0;
    for (let i = 0; i < 100; i++) if ((await store.check("k", unchecked({ name: "per-minute", limit: 2, period: "1m" }), reject)).allowed) admitted++;
    expect(admitted).toBe(2);
    await store.close();
  });

  it("holds leases of a written concurrency policy", async () => {
    const store = new MemoryStore();
    const policies = unchecked({ name: "uploads", algorithm: "concurrency", limit: 1, lease: "10s" });
    const first = await store.acquire("k", policies, { maxWaitMs: 0 });
    expect(first.acquired).toBe(true);
    expect((await store.acquire("k", policies, { maxWaitMs: 0 })).acquired).toBe(false);
    if (!first.acquired) throw new Error("unreachable");
    expect(await store.extend("k", policies, first.leaseId)).toEqual({ extended: true, leaseMs: 10_000 });
    expect(await store.release("k", policies, first.leaseId)).toEqual({ released: true });
    await store.close();
  });

  it("refuses garbage at every entry point, and never admits", async () => {
    const store = new MemoryStore();
    const garbage = unchecked({ name: "g", limit: 2, periodMs: "1m" });
    const calls = [
      () => store.check("k", garbage, reject),
      () => store.peek("k", garbage),
      () => store.reset("k", garbage),
      () => store.acquire("k", garbage, { maxWaitMs: 0 }),
      () => store.release("k", garbage, "lease"),
      () => store.extend("k", garbage, "lease"),
    ];
    for (const call of calls) await expect(call()).rejects.toThrow(/^policies\.0\.algorithm: must be one of/);
    await expect(store.check("k", unchecked("per-minute"), reject)).rejects.toThrow(TypeError);
    await store.close();
  });
});
