import { describe, expect, it } from "vitest";
import { DEFAULT_LEASE_MS, parsePolicy } from "../../../src/core/policy.js";
import { ValidationError } from "../../../src/core/validation.js";

const valid = { name: "per-minute", algorithm: "gcra", limit: 600, period: "1m" };

/** The ValidationError parsePolicy throws for `input`, as [field, message]. */
function refusal(input: unknown): [string, string] {
  try {
    parsePolicy(input, "policy");
  } catch (error) {
    if (error instanceof ValidationError) return [error.field, error.message];
    throw error;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

describe("parsePolicy: accepted policies", () => {
  it("resolves durations and fills defaults", () => {
    expect(parsePolicy(valid, "policy")).toEqual({ name: "per-minute", algorithm: "gcra", limit: 600, periodMs: 60_000, burst: 600, leaseMs: DEFAULT_LEASE_MS, failMode: "closed" });
    expect(parsePolicy({ name: "a", limit: 5, period: 250 }, "policy")).toMatchObject({ algorithm: "gcra", periodMs: 250, burst: 5 });
  });

  it("keeps burst for gcra and token-bucket and sets it to limit elsewhere", () => {
    expect(parsePolicy({ ...valid, algorithm: "token-bucket", burst: 50 }, "policy").burst).toBe(50);
    expect(parsePolicy({ ...valid, algorithm: "sliding-log" }, "policy").burst).toBe(600);
  });

  it("takes a lease for concurrency and needs no period", () => {
    expect(parsePolicy({ name: "slots", algorithm: "concurrency", limit: 4, lease: "2m", failMode: "open" }, "policy")).toMatchObject({ leaseMs: 120_000, failMode: "open", limit: 4 });
    expect(parsePolicy({ name: "slots", algorithm: "concurrency", limit: 4 }, "policy").leaseMs).toBe(30_000);
  });

  it("accepts names of 1 to 64 characters from [a-z0-9._-] starting with a letter or digit", () => {
    for (const name of ["a", "0", "per-minute", "api.v2_search", "x".repeat(64)]) expect(parsePolicy({ ...valid, name }, "policy").name).toBe(name);
  });

  it("accepts limits and bursts at the edges: 1 and 1e9", () => {
    expect(parsePolicy({ ...valid, limit: 1, burst: 1e9 }, "policy")).toMatchObject({ limit: 1, burst: 1e9 });
    expect(parsePolicy({ ...valid, limit: 1e9 }, "policy").limit).toBe(1e9);
  });
});

describe("parsePolicy: every error names the field, the rule and the bad value", () => {
  it.each([
    [{ ...valid, limit: -1 }, "policy.limit", "policy.limit: must be a positive integer from 1 to 1000000000 (fixed-window and credits: to 1000000000000000; sliding-log: to 100000), got -1"],
    [{ ...valid, limit: 0 }, "policy.limit", "got 0"],
    [{ ...valid, limit: 1.5 }, "policy.limit", "got 1.5"],
    [{ ...valid, limit: "5" }, "policy.limit", 'got "5"'],
    [{ ...valid, limit: 1e9 + 1 }, "policy.limit", "got 1000000001"],
    [{ name: "a", period: "1s" }, "policy.limit", "is required (a positive integer from 1 to 1000000000 (fixed-window and credits: to 1000000000000000; sliding-log: to 100000))"],
    [{ ...valid, name: "Per-Minute" }, "policy.name", 'must match [a-z0-9][a-z0-9._-]{0,63}, got "Per-Minute"'],
    [{ ...valid, name: "-a" }, "policy.name", 'got "-a"'],
    [{ ...valid, name: "x".repeat(65) }, "policy.name", "must match"],
    [{ ...valid, name: 7 }, "policy.name", "got 7"],
    [{ limit: 1, period: "1s" }, "policy.name", "is required (a string)"],
    [{ ...valid, algorithm: "leaky-bucket" }, "policy.algorithm", 'must be one of gcra, token-bucket, fixed-window, sliding-window, sliding-log, concurrency, credits, got "leaky-bucket"'],
    [{ ...valid, burst: 0 }, "policy.burst", "must be a positive integer from 1 to 1000000000, got 0"],
    [{ ...valid, burst: 2.5 }, "policy.burst", "got 2.5"],
    [{ ...valid, failMode: "maybe" }, "policy.failMode", 'must be "open" or "closed", got "maybe"'],
    [{ ...valid, period: "1w" }, "policy.period", 'got "1w"'],
    [{ ...valid, period: 0 }, "policy.period", "must be between 1ms and 366d, got 0"],
    [{ ...valid, period: "0s" }, "policy.period", 'must be between 1ms and 366d, got "0s"'],
    [{ ...valid, period: "367d" }, "policy.period", 'got "367d"'],
    [{ ...valid, period: true }, "policy.period", "got true"],
    [{ name: "slots", algorithm: "concurrency", limit: 1, lease: "0ms" }, "policy.lease", 'must be between 1ms and 366d, got "0ms"'],
    [{ name: "a", algorithm: "fixed-window", limit: 1 }, "policy.period", "is required for fixed-window, got nothing"],
    [{ name: "a", algorithm: "sliding-log", limit: 100_001, period: "1s" }, "policy.limit", "must be at most 100000 for sliding-log (use sliding-window for larger limits), got 100001"],
  ])("refuses %j at %s", (input, field, message) => {
    const [actualField, actualMessage] = refusal(input);
    expect(actualField).toBe(field);
    expect(actualMessage.startsWith(`${field}: `)).toBe(true);
    expect(actualMessage).toContain(message);
  });

  it("names an unknown key as the field", () => {
    expect(refusal({ ...valid, limt: 5 })).toEqual(["policy.limt", "policy.limt: is not a known field"]);
  });

  it("refuses burst on algorithms that have no capacity", () => {
    for (const algorithm of ["fixed-window", "sliding-window", "sliding-log"]) {
      expect(refusal({ ...valid, algorithm, burst: 5 })).toEqual(["policy.burst", "policy.burst: is only used by gcra and token-bucket, got 5"]);
    }
    expect(refusal({ name: "slots", algorithm: "concurrency", limit: 1, burst: 5 })[0]).toBe("policy.burst");
  });

  it("refuses lease on rate algorithms and period on concurrency, quoting the value as written", () => {
    expect(refusal({ ...valid, lease: "1s" })).toEqual(["policy.lease", 'policy.lease: is only used by concurrency, got "1s"']);
    expect(refusal({ name: "slots", algorithm: "concurrency", limit: 1, period: "1s" })).toEqual(["policy.period", 'policy.period: is not used by concurrency (use lease), got "1s"']);
  });

  it("refuses a policy that is not an object", () => {
    for (const input of [null, "per-minute", 5, []]) {
      const [field, message] = refusal(input);
      expect(field).toBe("policy");
      expect(message).toContain(`got ${JSON.stringify(input)}`);
    }
  });

  it("uses the caller's field prefix", () => {
    try {
      parsePolicy({ ...valid, limit: -1 }, "policies.per-minute");
      expect.unreachable();
    } catch (error) {
      expect((error as ValidationError).message).toBe("policies.per-minute.limit: must be a positive integer from 1 to 1000000000 (fixed-window and credits: to 1000000000000000; sliding-log: to 100000), got -1");
    }
  });
});
