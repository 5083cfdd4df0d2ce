import { describe, expect, it } from "vitest";
import { KeyState } from "../../../src/core/key-state.js";
import { ValidationError } from "../../../src/core/validation.js";
import { MemoryStore } from "../../../src/stores/memory.js";
import { policyOf } from "./core-helpers.js";

const T0 = 1_699_920_000_000;

describe("debit (pure core)", () => {
  it("refuses a stack with a concurrency policy, naming mode, and changes nothing", () => {
    const key = new KeyState();
    const rate = policyOf({ name: "rate", limit: 5, period: "1s" });
    const slots = policyOf({ name: "slots", algorithm: "concurrency", limit: 2 });
    const attempt = () => key.debit([rate, slots], T0, 1);
    expect(attempt).toThrow(ValidationError);
    expect(attempt).toThrow(/^mode: "debit" is not for concurrency policies \("slots"/);
    expect(key.states.size).toBe(0);
  });

  it("refuses a cost that is not an integer −1e9 … 1e9 (negative: a refund), naming cost", () => {
    const key = new KeyState();
    const rate = policyOf({ limit: 5, period: "1s" });
    for (const cost of [-1e9 - 1, 1.5, 1e9 + 1, Number.NaN]) expect(() => key.debit([rate], T0, cost)).toThrow(/^cost: must be an integer from -1000000000 to 1000000000 \(negative: a refund\)/);
    expect(key.debit([rate], T0, 1e9).decision.allowed).toBe(false);
  });

  it("keeps a sliding log at most 65 entries however many debits land", () => {
    const key = new KeyState();
    const log = policyOf({ algorithm: "sliding-log", limit: 100, period: "1s" });
    for (let ms = 0; ms < 5000; ms += 3) key.debit([log], T0 + ms, 7);
    const stored = key.states.get("p");
    expect(stored?.algorithm).toBe("sliding-log");
    const entries = stored?.algorithm === "sliding-log" ? stored.state.entries : [];
    expect(entries.length).toBeGreaterThan(60);
    expect(entries.length).toBeLessThanOrEqual(65);
  });

  it("a cost-0 debit is a peek: nothing is written", () => {
    const key = new KeyState();
    const output = key.debit([policyOf({ limit: 2, period: "1s" })], T0, 0);
    expect(output.changes.size).toBe(0);
    expect(output.decision).toMatchObject({ allowed: true, remaining: 2 });
  });
});

describe("MemoryStore.debit", () => {
  it("debits past the limit, and the next check waits the debt out", async () => {
    let nowMs = T0;
    const store = new MemoryStore({ clockMs: () => nowMs });
    const perSecond = policyOf({ algorithm: "fixed-window", limit: 3, period: "1s" });
    expect(await store.debit("k", [perSecond], 10)).toMatchObject({ allowed: false, remaining: 0, retryAfterMs: 1000 });
    expect((await store.check("k", [perSecond], { cost: 1, mode: "reject", maxWaitMs: 0 })).allowed).toBe(false);
    nowMs += 1000;
    expect((await store.check("k", [perSecond], { cost: 1, mode: "reject", maxWaitMs: 0 })).allowed).toBe(true);
    await expect(store.debit("k", [policyOf({ algorithm: "concurrency", limit: 1 })], 1)).rejects.toThrow(/^mode: /);
    await store.close();
  });
});
