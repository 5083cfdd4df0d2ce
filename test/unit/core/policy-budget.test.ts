import { describe, expect, it } from "vitest";
import { MAX_BUDGET_LIMIT, MAX_LIMIT, parsePolicy } from "../../../src/core/policy.js";
import { storePolicies } from "../../../src/core/store-policies.js";
import { ValidationError } from "../../../src/core/validation.js";
import { parseOverride } from "../../../src/overrides/parse.js";

/** [field, message] of the ValidationError `run` throws. */
function refusal(run: () => unknown): [string, string] {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError) return [error.field, error.message];
    throw error;
  }
  throw new Error("accepted");
}

// Money budgets (docs/counting.md, "Prices"): $50,000 a month is 5e13 microdollars.
const monthly = { name: "usd", algorithm: "fixed-window", limit: 5e13, calendar: "month" };

describe("limits past 1e9: fixed-window and credits only (MAX_BUDGET_LIMIT)", () => {
  it("fixed-window (calendar or period) and credits (limit and refill.to) take up to 1e15", () => {
    expect(MAX_BUDGET_LIMIT).toBe(1e15);
    expect(parsePolicy(monthly, "policy").limit).toBe(5e13);
    expect(parsePolicy({ name: "w", algorithm: "fixed-window", limit: 1e15, period: "1h" }, "policy").limit).toBe(1e15);
    expect(parsePolicy({ name: "c", algorithm: "credits", limit: 1e15, refill: { calendar: "month", to: 5e13 } }, "policy")).toMatchObject({ limit: 1e15, refillTo: 5e13 });
  });

  it("past 1e15 is refused naming limit (or refill.to) and the bound", () => {
    expect(refusal(() => parsePolicy({ ...monthly, limit: 1e15 + 1 }, "policy"))).toEqual(["policy.limit", "policy.limit: must be a positive integer from 1 to 1000000000 (fixed-window and credits: to 1000000000000000; sliding-log: to 100000), got 1000000000000001"]);
    expect(refusal(() => parsePolicy({ name: "c", algorithm: "credits", limit: 10, refill: { calendar: "month", to: 1e15 + 1 } }, "policy"))).toEqual(["policy.refill.to", "policy.refill.to: must be an integer from 0 to 1000000000000000, got 1000000000000001"]);
  });

  it.each(["gcra", "token-bucket", "sliding-window", "concurrency"])("%s keeps 1e9, naming its own bound", (algorithm) => {
    const policy = { name: "p", algorithm, limit: MAX_LIMIT + 1, ...(algorithm === "concurrency" ? {} : { period: "1m" }) };
    expect(parsePolicy({ ...policy, limit: MAX_LIMIT }, "policy").limit).toBe(MAX_LIMIT);
    expect(refusal(() => parsePolicy(policy, "policy"))).toEqual(["policy.limit", `policy.limit: must be at most 1000000000 for ${algorithm} (only fixed-window and credits, whose counts are whole numbers, take up to 1000000000000000: a money budget), got 1000000001`]);
  });

  it("a policy handed to a store whole is held to its algorithm's bound", () => {
    const stored = parsePolicy(monthly, "p");
    expect(storePolicies([stored])[0]).toBe(stored);
    expect(() => storePolicies([{ ...stored, limit: 1e15 + 1 }])).toThrow("policies.0.limit: must be an integer from 1 to 1000000000000000");
    expect(() => storePolicies([{ ...parsePolicy({ name: "g", limit: 5, period: "1s" }, "p"), limit: 5e13 }])).toThrow("policies.0.limit: must be an integer from 1 to 1000000000");
    const credits = parsePolicy({ name: "c", algorithm: "credits", limit: 10, refill: { calendar: "month" } }, "p");
    expect(storePolicies([{ ...credits, refillTo: 1e15 }])[0]).toMatchObject({ refillTo: 1e15 });
    expect(() => storePolicies([{ ...credits, refillTo: 1e15 + 1 }])).toThrow("policies.0.refillTo: must be an integer from 0 to 1000000000000000");
  });

  it("an override's limit is held to its policy's bound", () => {
    const catalog = new Map([monthly, { name: "g", limit: 5, period: "1s" }].map((input) => [input.name, parsePolicy(input, "p")]));
    expect(parseOverride({ policy: "usd", key: "acme", limit: 1e15 }, catalog, "overrides.0").limit).toBe(1e15);
    expect(refusal(() => parseOverride({ policy: "g", key: "acme", limit: 5e13 }, catalog, "overrides.0"))).toEqual(["overrides.0.limit", 'overrides.0.limit: must be at most 1000000000 for gcra ("g") (only fixed-window and credits, whose counts are whole numbers, take up to 1000000000000000: a money budget), got 50000000000000']);
    expect(refusal(() => parseOverride({ policy: "usd", key: "acme", limit: 1e15 + 1 }, catalog, "overrides.0"))[0]).toBe("overrides.0.limit");
  });
});
