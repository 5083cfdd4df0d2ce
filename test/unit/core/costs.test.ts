import { describe, expect, it } from "vitest";
import { policyCosts } from "../../../src/core/costs.js";
import { KeyState } from "../../../src/core/key-state.js";
import { ValidationError } from "../../../src/core/validation.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { policyOf, snapshot } from "./core-helpers.js";

// Costs per policy (CheckOptions.costs, a debit's cost list): what is refused, naming the field,
// before anything is decided; the decisions themselves are rows of the conformance table
// (test/conformance/scenario-table-costs.ts).

const rpm = policyOf({ name: "rpm", algorithm: "fixed-window", limit: 5, period: "1m" });
const itpm = policyOf({ name: "itpm", algorithm: "token-bucket", limit: 100, period: "1m" });
const stack = [rpm, itpm];
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

/** The field a ValidationError names, or what was thrown instead. */
function refusedField(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error instanceof ValidationError ? { field: error.field, message: error.message } : error;
  }
  return "nothing thrown";
}

describe("costs per policy: validation", () => {
  it.each([
    ["a list of the wrong length", [1], "costs", /one cost per policy of the stack \(2\), got 1/],
    ["a non-integer", [1, 1.5], "costs.1", /integer from 0 to 1000000000.*got 1\.5/],
    ["a negative cost in a check", [-1, 1], "costs.0", /integer from 0/],
    ["a cost past 1e9", [1, 1e9 + 1], "costs.1", /to 1000000000/],
    ["a string", [1, "2"], "costs.1", /got "2"/],
    ["a name not in the stack", { rpm: 1, itpm: 2, otpm: 3 }, "costs.otpm", /names no policy of the stack \(rpm, itpm\)/],
    ["a policy left out", { rpm: 1 }, "costs", /no cost for policy "itpm"/],
    ["a cost by name out of range", { rpm: 1, itpm: -2 }, "costs.itpm", /integer from 0/],
    ["neither a list nor an object", 3, "costs", /a list of costs/],
  ])("a check refuses %s, naming the field", (_label, costs, field, message) => {
    const refused = refusedField(() => policyCosts(costs as never, stack, "costs", 0)) as { field: string; message: string };
    expect(refused.field).toBe(field);
    expect(refused.message).toMatch(message);
  });

  it("a debit's list takes signed costs and names `cost.<i>`", () => {
    expect(policyCosts([-5, 7], stack, "cost", -1e9)).toEqual([-5, 7]);
    expect(policyCosts({ itpm: 3, rpm: 0 }, stack, "cost", -1e9)).toEqual([0, 3]);
    expect(refusedField(() => policyCosts([0, -1e9 - 1], stack, "cost", -1e9))).toMatchObject({ field: "cost.1" });
  });

  it("the memory store refuses a bad list before deciding: nothing is consumed", async () => {
    const store = new MemoryStore();
    try {
      await expect(store.check("k", stack, { ...reject, costs: [1, 2, 3] })).rejects.toMatchObject({ name: "ValidationError", field: "costs" });
      await expect(store.check("k", stack, { ...reject, costs: { rpm: 1, tpm: 2 } })).rejects.toMatchObject({ field: "costs.tpm" });
      await expect(store.debit("k", stack, [1, 0.5])).rejects.toMatchObject({ field: "cost.1" });
      const peeked = await store.peek("k", stack);
      expect(peeked.policies.map((part) => part.remaining)).toEqual([5, 100]);
    } finally {
      await store.close();
    }
  });

  it("KeyState refuses a bad list and keeps its state as it was", () => {
    const key = new KeyState();
    key.check(stack, 0, { ...reject, costs: [1, 10] });
    const before = snapshot(key);
    expect(refusedField(() => key.check(stack, 1, { ...reject, costs: [1, Number.NaN] }))).toMatchObject({ field: "costs.1" });
    expect(refusedField(() => key.debit(stack, 1, [1]))).toMatchObject({ field: "cost" });
    expect(snapshot(key)).toBe(before);
  });
});
