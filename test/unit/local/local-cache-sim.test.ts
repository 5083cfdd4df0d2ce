import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import { simulateHotKey } from "../../../scripts/bench/hotkeys-sim.js";

describe("hot-key simulation (small numbers; the full run is npm run bench:hotkeys)", () => {
  const base = { isolates: 4, rttMs: 20, arrivalsPerSec: 2000, durationMs: 2000 };

  it("under its limit: every request admitted, no over-admission, most answered locally", async () => {
    const policy = { name: "hot", algorithm: "fixed-window" as const, limit: 4000, period: 500, local: { share: 0.1 } };
    const result = await simulateHotKey({ ...base, policy, cached: true });
    expect(result.overAdmitted).toBe(0);
    expect(result.admitted).toBe(result.exactAdmitted);
    expect(result.storeCalls).toBeLessThan(result.decisions / 10);
  });

  it("over its limit: never over-admits in any window, and admits the limit in steady windows", async () => {
    const policy = { name: "hot", algorithm: "fixed-window" as const, limit: 200, period: 500, local: { share: 0.1 } };
    const result = await simulateHotKey({ ...base, policy, cached: true });
    expect(result.overAdmitted).toBe(0);
    expect(result.worstUnderAdmission).toBeLessThanOrEqual(0.02);
  });
});

describe("policy.local", () => {
  const rate = { name: "hot", limit: 10, period: "1s" };
  it.each([
    [{ ...rate, local: { share: 0.6 } }, "policy.local.share: must be a number from 0 to 0.5, got 0.6"],
    [{ ...rate, local: { share: "0.1" } }, "policy.local.share: must be a number from 0 to 0.5"],
    [{ ...rate, local: {} }, "policy.local.share: is required (a number from 0 to 0.5)"],
    [{ ...rate, local: { share: 0.1, ttl: 5 } }, "policy.local.ttl: is not a known field"],
    [{ ...rate, local: { share: 0.1 } }, "policy.local.share: must be 0 (the deny cache alone) for gcra"],
    [{ ...rate, algorithm: "sliding-log", local: { share: 0.1 } }, "policy.local.share: must be 0 (the deny cache alone) for sliding-log"],
    [{ name: "slots", algorithm: "concurrency", limit: 5, local: { share: 0 } }, "policy.local: is not for concurrency"],
  ])("refuses %j", (input, message) => {
    expect(() => parsePolicy(input, "policy")).toThrow(message);
  });

  it("accepts share 0 on any rate algorithm and batches on the window algorithms", () => {
    expect(parsePolicy({ ...rate, local: { share: 0 } }, "policy").local).toEqual({ share: 0 });
    expect(parsePolicy({ ...rate, algorithm: "token-bucket", local: { share: 0.5 } }, "policy").local).toEqual({ share: 0.5 });
    expect(parsePolicy(rate, "policy")).not.toHaveProperty("local");
  });
});
