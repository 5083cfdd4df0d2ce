import { afterEach, describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import type { Override } from "../../../src/overrides/parse.js";
import { OverrideIndex } from "../../../src/overrides/resolver.js";

// What one lookup of a key's override costs, counted rather than timed (a busy machine times
// nothing reliably): the Map lookups it makes, and what they read. A string key is read whole
// (a slice of the key is a new string, hashed afresh); a number is one step.
const policy = parsePolicy({ name: "api", algorithm: "gcra", limit: 100, period: "1m" }, "p");
const NOW = 1_800_000_000_000;
const originalGet = Map.prototype.get;

interface Work {
  lookups: number;
  /** Characters of string keys looked up, plus one per number key. */
  read: number;
}

/** Resolves `key` once with every Map lookup counted: the engine's call for a gateway request keyed by `ip`. */
function workOf(index: OverrideIndex, key: string): { limit: number; work: Work } {
  const work: Work = { lookups: 0, read: 0 };
  Map.prototype.get = function (this: Map<unknown, unknown>, lookedUp: unknown) {
    work.lookups++;
    work.read += typeof lookedUp === "string" ? lookedUp.length : 1;
    return originalGet.call(this, lookedUp);
  };
  try {
    const [resolved] = index.resolve([policy], key, NOW, "ip");
    return { limit: resolved!.limit, work };
  } finally {
    Map.prototype.get = originalGet;
  }
}

const tenants = (count: number): Override[] => Array.from({ length: count }, (_, i) => ({ policy: "api", source: "ip", key: `tenant-${i}-*`, limit: 1000 + i }));

afterEach(() => {
  Map.prototype.get = originalGet;
});

describe("a key's override is found in work bounded by the key's length, not by the overrides held", () => {
  it("the same key costs the same with 1,000 or 10,000 wildcard overrides", () => {
    const small = new OverrideIndex([...tenants(1_000), { policy: "api", source: "ip", key: "203.0.113.9", limit: 7 }]);
    const large = new OverrideIndex([...tenants(10_000), { policy: "api", source: "ip", key: "203.0.113.9", limit: 7 }]);
    for (const [key, limit] of [
      ["tenant-42-user-7", 1042], // the longest wildcard that matches
      ["tenant-7-", 1007],
      ["203.0.113.9", 7], // exact, before any wildcard
      ["198.51.100.20", 100], // none: the policy as configured
      ["tenant-", 100],
    ] as const) {
      const inSmall = workOf(small, key);
      const inLarge = workOf(large, key);
      expect([inSmall.limit, inLarge.limit]).toEqual([limit, limit]);
      expect(inLarge.work, key).toEqual(inSmall.work);
    }
  });

  it("wildcards of 500 different prefix lengths: a 500-character key is read about twice, not once per length", () => {
    // Prefixes "-", "a-", "aa-", …: a key of a's runs past every one of them and matches none.
    const nested: Override[] = Array.from({ length: 500 }, (_, length) => ({ policy: "api", source: "ip", key: `${"a".repeat(length)}-*`, limit: 10 + length }));
    const index = new OverrideIndex([...nested, ...tenants(10_000)]);
    const key = "a".repeat(500);
    const { limit, work } = workOf(index, key);
    expect(limit).toBe(100);
    // The exact lookup reads the key once; the wildcards one step per character, at most.
    expect(work.read).toBeLessThanOrEqual(2 * key.length + 16);
    expect(work.lookups).toBeLessThanOrEqual(key.length + 4);
    // And the longest prefix still wins, an expired one passed over.
    expect(workOf(index, `${"a".repeat(300)}-x`).limit).toBe(310);
    const expiring = new OverrideIndex([...nested, { policy: "api", source: "ip", key: `${"a".repeat(300)}-x*`, limit: 5, expiresAtMs: NOW - 1 }]);
    expect(workOf(expiring, `${"a".repeat(300)}-xyz`).limit).toBe(310);
  });
});
