import { describe, expect, it } from "vitest";
import { storedFreshAtMs } from "../../../src/core/algorithms.js";
import { KeyState } from "../../../src/core/key-state.js";
import { parsePolicy } from "../../../src/core/policy.js";
import { storePolicies } from "../../../src/core/store-policies.js";
import { ValidationError } from "../../../src/core/validation.js";

const rate = { name: "logins", algorithm: "fixed-window", limit: 5, period: "15m" };

function refusal(input: unknown): [string, string] {
  try {
    parsePolicy(input, "policies.logins");
  } catch (error) {
    if (error instanceof ValidationError) return [error.field, error.message];
    throw error;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

describe("policy block", () => {
  it("is a duration of 1 s … 1 d, kept as blockMs", () => {
    expect(parsePolicy({ ...rate, block: "15m" }, "policy").blockMs).toBe(900_000);
    expect(parsePolicy({ ...rate, block: 1000 }, "policy").blockMs).toBe(1000);
    expect(parsePolicy({ ...rate, block: "1d" }, "policy").blockMs).toBe(86_400_000);
    expect(parsePolicy(rate, "policy")).not.toHaveProperty("blockMs");
  });

  it("refuses what is out of range or not a duration, naming the field", () => {
    expect(refusal({ ...rate, block: "999ms" })).toEqual(["policies.logins.block", 'policies.logins.block: must be between 1s and 1d, got "999ms"']);
    expect(refusal({ ...rate, block: "2d" })).toEqual(["policies.logins.block", 'policies.logins.block: must be between 1s and 1d, got "2d"']);
    expect(refusal({ ...rate, block: "soon" })[0]).toBe("policies.logins.block");
    expect(refusal({ ...rate, block: true })[0]).toBe("policies.logins.block");
  });

  it("is not for concurrency", () => {
    expect(refusal({ name: "logins", algorithm: "concurrency", limit: 2, block: "1m" })).toEqual(["policies.logins.block", 'policies.logins.block: is not for concurrency (a lease is held, not spent: there is no rate to exceed), got "1m"']);
  });

  it("a store refuses a resolved policy with a bad blockMs (never decides from it)", () => {
    const policy = parsePolicy(rate, "policy");
    expect(() => storePolicies([{ ...policy, blockMs: 10 }])).toThrow(/^policies\.0\.blockMs: must be a whole number of ms from 1000 to 86400000/);
    expect(() => storePolicies([{ ...parsePolicy({ name: "c", algorithm: "concurrency", limit: 1 }, "p"), blockMs: 5000 }])).toThrow(/^policies\.0\.blockMs:/);
  });

  it("is state beside the policy's own: the key stays until the block ends, then is fresh", () => {
    const policy = parsePolicy({ name: "p", algorithm: "gcra", limit: 1, period: "1s", block: "1m" }, "policy");
    const key = new KeyState();
    key.check([policy], 0, { cost: 1, mode: "reject", maxWaitMs: 0 });
    const { changes } = key.check([policy], 1, { cost: 1, mode: "reject", maxWaitMs: 0 });
    expect(changes.get("p")).toEqual({ stored: { algorithm: "gcra", state: { tatMs: 1000 }, blockedUntilMs: 60_001 }, freshAtMs: 60_001 });
    expect(storedFreshAtMs(key.states.get("p")!, policy)).toBe(60_001);
    expect(key.check([policy], 60_000, { cost: 0, mode: "reject", maxWaitMs: 0, peek: true }).decision).toMatchObject({ allowed: false, blockedMs: 1 });
    expect(key.check([policy], 60_001, { cost: 1, mode: "reject", maxWaitMs: 0 }).decision).toMatchObject({ allowed: true });
    expect(key.states.get("p")).toEqual({ algorithm: "gcra", state: { tatMs: 61_001 } });
  });
});
