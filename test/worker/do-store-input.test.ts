import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Policy } from "../../src/core/types.js";
import { DurableObjectStore } from "../../src/stores/durable-object.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

/** What plain JavaScript can hand a store: the types say Policy, the value says otherwise. */
function unchecked(...values: unknown[]): Policy[] {
  return values as Policy[];
}

describe("DurableObjectStore takes what users write", () => {
  it("limits a policy written as in a config: 2 of 10 admitted with limit 2", async () => {
    const store = new DurableObjectStore(env.LIMITER);
    let admitted = 0;
    for (let i = 0; i < 10; i++) if ((await store.check("written", unchecked({ name: "per-minute", limit: 2, period: "1m" }), reject)).allowed) admitted++;
    expect(admitted).toBe(2);
  });

  it("refuses garbage with a TypeError naming the field, not a StoreUnavailableError that failMode open would admit", async () => {
    const store = new DurableObjectStore(env.LIMITER);
    const garbage = unchecked({ name: "g", algorithm: "gcra", limit: 2, periodMs: 60_000, burst: "2", leaseMs: 1000, failMode: "open" });
    const error = await store.check("garbage", garbage, reject).then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(TypeError);
    expect((error as Error).message).toMatch(/^policies\.0\.burst: must be an integer/);
  });

  it("refuses costs per policy that do not fit the stack with a ValidationError naming the field, not a StoreUnavailableError", async () => {
    const store = new DurableObjectStore(env.LIMITER);
    const stack = unchecked({ name: "a", limit: 2, period: "1m" }, { name: "b", limit: 2, period: "1m" });
    await expect(store.check("costs-input", stack, { ...reject, costs: [1] })).rejects.toMatchObject({ name: "ValidationError", field: "costs" });
    await expect(store.check("costs-input", stack, { ...reject, costs: { a: 1, c: 1 } })).rejects.toMatchObject({ name: "ValidationError", field: "costs.c" });
    await expect(store.debit("costs-input", stack, [1, 2.5])).rejects.toMatchObject({ name: "ValidationError", field: "cost.1" });
    expect((await store.peek("costs-input", stack)).policies.map((part) => part.remaining)).toEqual([2, 2]);
  });
});
