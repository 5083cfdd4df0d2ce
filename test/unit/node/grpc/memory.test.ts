import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../../src/core/policy.js";
import { MemoryStore } from "../../../../src/stores/memory.js";
import { describeRlsSuite } from "./rls-suite.js";

describeRlsSuite("the memory store", async () => {
  const limiter = new MemoryStore();
  return { limiter, close: () => limiter.close() };
});

describe("the memory store under one domain key", () => {
  it("sheds a domain's fresh counters on its sweep, keeping the live ones", async () => {
    let nowMs = 1_000_000;
    const store = new MemoryStore({ clockMs: () => nowMs, sweepIntervalMs: 60_000 });
    const perSecond = parsePolicy({ name: "r.second", algorithm: "fixed-window", limit: 5, period: "1s" }, "policy");
    const perDay = parsePolicy({ name: "r.day", algorithm: "fixed-window", limit: 5, period: "1d" }, "policy");
    await store.check("rls/d", [perSecond, perDay], { cost: 1, mode: "reject", maxWaitMs: 0 });
    nowMs += 2000;
    store.sweep();
    expect(store.size).toBe(1);
    expect(store.states).toBe(1);
    const key = (store as unknown as { keys: { get(key: string): { local: { state: { states: Map<string, unknown> } } } } }).keys.get("rls/d");
    expect([...key.local.state.states.keys()]).toEqual(["r.day"]);
    expect((await store.peek("rls/d", [perDay])).remaining).toBe(4);
    await store.close();
  });
});
