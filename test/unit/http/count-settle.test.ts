import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import { type CountedOutcome, peekRequest } from "../../../src/http/count-limit.js";
import type { LimitPlan } from "../../../src/http/limit.js";
import { ForwardingLimiter, type Limiter } from "../../../src/core/limiter.js";
import { observeLimiter } from "../../../src/observe/observed-limiter.js";
import { MemoryStore } from "../../../src/stores/memory.js";

// Peek now, settle on the answer (src/http/count-limit.ts): where the store lives in this
// process its debit answers in the call, so a counted answer's head waits for no promise.
// (A fixed window ends on the clock's minute: `t` is whatever is left of it.)

const policy = parsePolicy({ name: "logins", algorithm: "fixed-window", limit: 5, period: "1m" }, "policies.0");
const plan: LimitPlan = { policies: [policy], onLimit: "reject", maxDelayMs: 0, dryRun: false, legacyHeaders: false };

async function admitted(limiter: Limiter, log: (entry: Record<string, unknown>) => void = () => {}) {
  const outcome: CountedOutcome = await peekRequest(limiter, "user:1", plan, { label: "routes.0", log });
  if (!outcome.admitted) throw new Error("the peek refused a fresh key");
  return outcome;
}

describe("settling a counted request", () => {
  it("answers the fields after the debit in the call on the memory store", async () => {
    const outcome = await admitted(new MemoryStore());
    expect(outcome.headers.RateLimit).toMatch(/^"logins";r=5;t=\d+$/);
    const after = outcome.settle(3);
    expect(after).not.toBeInstanceOf(Promise);
    expect((after as Record<string, string>).RateLimit).toMatch(/^"logins";r=2;t=\d+$/);
  });

  it("keeps answering in the call through the metrics decorator, and a debit that overdraws shows r=0 without Retry-After", async () => {
    const blocks: unknown[] = [];
    const observed = observeLimiter(new MemoryStore(), { block: (event) => blocks.push(event) }, "routes.0");
    const outcome = await admitted(observed);
    const after = outcome.settle(8) as Record<string, string>;
    expect(after.RateLimit).toMatch(/^"logins";r=0;t=\d+$/);
    expect(after["Retry-After"]).toBeUndefined();
  });

  it("answers a promise of the same fields where the store answers later", async () => {
    // A decorator forwards debit but not debitNow: the store is then asked as a remote one is.
    const outcome = await admitted(new ForwardingLimiter(new MemoryStore()));
    const after = outcome.settle(3);
    expect(after).toBeInstanceOf(Promise);
    expect((await after).RateLimit).toMatch(/^"logins";r=2;t=\d+$/);
  });

  it("logs a debit the store refuses and answers the fields before it, in the call and later alike", async () => {
    for (const limiter of [new MemoryStore(), new ForwardingLimiter(new MemoryStore())]) {
      const logged: Record<string, unknown>[] = [];
      const outcome = await admitted(limiter, (entry) => logged.push(entry));
      // Above the largest cost a store takes (1e9): the store refuses it.
      const after = await outcome.settle(2_000_000_000);
      expect(after).toEqual(outcome.headers);
      expect(logged).toEqual([expect.objectContaining({ event: "debit-failed", route: "routes.0", key: "user:1", cost: 2_000_000_000 })]);
    }
  });
});
