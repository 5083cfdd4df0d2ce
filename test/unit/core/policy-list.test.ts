import { describe, expect, it } from "vitest";
import { UnknownPolicyError, parsePolicy, parsePolicyList, resolvePolicies } from "../../../src/core/policy.js";
import { ValidationError } from "../../../src/core/validation.js";

const perMinute = { name: "per-minute", limit: 600, period: "1m" };
const perHour = { name: "per-hour", limit: 3600, period: "1h" };

/** The error `run` throws, as [class name, field, message]. */
function failure(run: () => unknown): [string, string, string] {
  try {
    run();
  } catch (error) {
    if (error instanceof ValidationError || error instanceof UnknownPolicyError) return [error.name, error.field, error.message];
    throw error;
  }
  throw new Error("did not throw");
}

describe("parsePolicyList", () => {
  it("parses every policy in order", () => {
    expect(parsePolicyList([perMinute, perHour], "policies").map((p) => [p.name, p.periodMs])).toEqual([
      ["per-minute", 60_000],
      ["per-hour", 3_600_000],
    ]);
  });

  it("names a bad policy by its name, or by its index when the name is unusable", () => {
    expect(failure(() => parsePolicyList([perMinute, { ...perHour, limit: -1 }], "policies"))).toEqual([
      "ValidationError",
      "policies.per-hour.limit",
      "policies.per-hour.limit: must be a positive integer from 1 to 1000000000 (fixed-window and credits: to 1000000000000000; sliding-log: to 100000), got -1",
    ]);
    expect(failure(() => parsePolicyList([perMinute, { ...perHour, name: "Per Hour" }], "policies"))[1]).toBe("policies.1.name");
    expect(failure(() => parsePolicyList([perMinute, null], "policies"))[1]).toBe("policies.1");
  });

  it("refuses duplicate names", () => {
    expect(failure(() => parsePolicyList([perMinute, { ...perHour, name: "per-minute" }], "policies"))).toEqual([
      "ValidationError",
      "policies.per-minute.name",
      'policies.per-minute.name: must be unique, "per-minute" appears twice',
    ]);
  });

  it("refuses a value that is not an array", () => {
    expect(failure(() => parsePolicyList(perMinute, "policies"))).toEqual(["ValidationError", "policies", `policies: must be an array of policies, got ${JSON.stringify(perMinute)}`]);
  });
});

describe("resolvePolicies", () => {
  const catalog = new Map([perMinute, perHour].map((input) => [input.name, parsePolicy(input, "policies")]));

  it("resolves a name, an inline policy and a stack of both", () => {
    expect(resolvePolicies("per-minute", catalog).map((p) => p.name)).toEqual(["per-minute"]);
    expect(resolvePolicies({ name: "inline", limit: 1, period: 10 }, catalog)[0]).toMatchObject({ name: "inline", periodMs: 10 });
    expect(resolvePolicies(["per-hour", { name: "burst", algorithm: "token-bucket", limit: 1, period: "1s", burst: 3 }], catalog).map((p) => p.name)).toEqual(["per-hour", "burst"]);
  });

  it("answers an unknown name with UnknownPolicyError at its position, naming the policies that exist", () => {
    expect(failure(() => resolvePolicies("per-day", catalog))).toEqual(["UnknownPolicyError", "policy", 'policy: no policy named "per-day" in the config (it has "per-minute", "per-hour")']);
    expect(failure(() => resolvePolicies("per-day", new Map()))[2]).toBe('policy: no policy named "per-day" in the config (the config has no policies)');
    expect(failure(() => resolvePolicies(["per-minute", "per-day"], catalog))[1]).toBe("policy.1");
  });

  it("refuses empty stacks, stacks over 16 and a policy stacked twice", () => {
    expect(failure(() => resolvePolicies([], catalog))).toEqual(["ValidationError", "policy", "policy: must name at least one policy, got []"]);
    const seventeen = Array.from({ length: 17 }, (_, i) => ({ name: `p${i}`, limit: 1, period: 1 }));
    expect(failure(() => resolvePolicies(seventeen, catalog))[2]).toBe("policy: may stack at most 16 policies, got 17");
    expect(resolvePolicies(seventeen.slice(0, 16), catalog)).toHaveLength(16);
    expect(failure(() => resolvePolicies(["per-minute", { ...perMinute, limit: 5 }], catalog))).toEqual(["ValidationError", "policy.1", 'policy.1: stacks "per-minute" twice']);
  });

  it("names the bad field of an inline policy and refuses other values", () => {
    expect(failure(() => resolvePolicies([{ name: "x", limit: 0, period: 1 }], catalog))[1]).toBe("policy.0.limit");
    expect(failure(() => resolvePolicies(42, catalog))).toEqual(["ValidationError", "policy", "policy: must be a policy name or a policy object, got 42"]);
  });
});
