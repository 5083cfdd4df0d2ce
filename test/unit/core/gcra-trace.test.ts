import { describe, expect, it } from "vitest";
import { KeyState } from "../../../src/core/key-state.js";
import { parsePolicy } from "../../../src/core/policy.js";

// The trace from the foundation issue: limit 1, period 1s, burst 5.
describe("GCRA trace (limit 1, period 1s, burst 5)", () => {
  const policy = parsePolicy({ name: "trace", algorithm: "gcra", limit: 1, period: "1s", burst: 5 }, "policy");
  const reject = (cost: number) => ({ cost, mode: "reject" as const, maxWaitMs: 0 });

  it("follows the documented trace", () => {
    const key = new KeyState();
    const tooBig = key.check([policy], 0, reject(6)).decision;
    expect(tooBig).toMatchObject({ allowed: false, retryAfterMs: null });

    for (let i = 0; i < 5; i++) {
      const decision = key.check([policy], 0, reject(1)).decision;
      expect(decision).toMatchObject({ allowed: true, remaining: 4 - i, resetMs: 1000 * (i + 1), retryAfterMs: 0 });
    }
    expect(key.check([policy], 0, reject(1)).decision).toMatchObject({ allowed: false, retryAfterMs: 1000, remaining: 0 });

    const before = JSON.stringify([...key.states]);
    const peek = key.check([policy], 3000, reject(0)).decision;
    expect(peek).toMatchObject({ allowed: true, remaining: 3 });
    expect(JSON.stringify([...key.states])).toBe(before);

    expect(key.check([policy], 3000, reject(1)).decision).toMatchObject({ allowed: true, remaining: 2 });
  });
});
