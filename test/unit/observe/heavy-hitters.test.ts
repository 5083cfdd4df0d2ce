import { describe, expect, it } from "vitest";
import { HeavyHitters } from "../../../src/observe/heavy-hitters.js";

describe("HeavyHitters (space-saving)", () => {
  it("counts exactly while the items fit", () => {
    const sketch = new HeavyHitters(10);
    for (let i = 0; i < 5; i++) sketch.add("alice", "per-user", 1000 + i);
    sketch.add("bob", "per-user", 2000);
    sketch.add("alice", "per-ip", 3000);
    expect(sketch.top()).toEqual([
      { key: "alice", policy: "per-user", count: 5, errorBound: 0, lastSeenMs: 1004 },
      { key: "alice", policy: "per-ip", count: 1, errorBound: 0, lastSeenMs: 3000 },
      { key: "bob", policy: "per-user", count: 1, errorBound: 0, lastSeenMs: 2000 },
    ]);
  });

  it("keeps the heavy keys through a million distinct ones, in fixed memory", () => {
    const sketch = new HeavyHitters(50);
    const heavy = ["attacker-1", "attacker-2", "attacker-3"];
    for (let i = 0; i < 1_000_000; i++) {
      sketch.add(`noise-${i}`, "per-ip", i);
      if (i % 5 === 0) sketch.add(heavy[i % 3]!, "per-ip", i);
    }
    expect(sketch.size).toBe(50);
    const top = sketch.top(3);
    expect(top.map((item) => item.key).sort()).toEqual(heavy);
    // Each was denied 1e6 / 5 / 3 ≈ 66,667 times, above the guarantee's total / capacity (1.2e6 / 50 = 24,000).
    // Space-saving never under-counts, and over-counts by at most errorBound.
    for (const item of top) {
      const truth = Math.floor(1_000_000 / 5 / 3);
      expect(item.count).toBeGreaterThanOrEqual(truth);
      expect(item.count - item.errorBound).toBeLessThanOrEqual(truth + 1);
    }
  });

  it("refuses a capacity that is not a positive integer", () => {
    expect(() => new HeavyHitters(0)).toThrow("HeavyHitters capacity must be a positive integer, got 0");
  });
});
