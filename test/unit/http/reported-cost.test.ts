import { describe, expect, it } from "vitest";
import { headerCost, reportedCost } from "../../../src/http/counting.js";
import { checkedCost } from "../../../src/http/counting-options.js";
import { UsageWarnings } from "../../../src/http/counting.js";

// One rule for what a reported cost is worth (docs/counting.md, "What a reported value costs"),
// whether the origin wrote it in a header or in its JSON, or a function answered it: the same
// text gives the same cost. A whole number is clamped to `max` (and 1e9), however large, even
// past what a double holds; a negative or fractional one, or no number at all, is `missing`.
const bounds = { max: 500, missing: 40 };
const cases: [string, number, boolean][] = [
  // [the value as written, its cost with max 500 and missing 40, usable]
  ["12", 12, true],
  ["0", 0, true],
  ["12.0", 12, true],
  ["1e3", 500, true],
  ["1e308", 500, true],
  ["9007199254740993", 500, true],
  ["1e400", 500, true],
  ["-3", 40, false],
  ["1.5", 40, false],
  ["-1e400", 40, false],
];

describe("reported costs: one rule for header and JSON", () => {
  it.each(cases)("%s costs %d (usable: %s) in a header and in JSON", (text, cost, usable) => {
    expect(headerCost(text, bounds)).toEqual({ cost, usable, present: true });
    expect(reportedCost(JSON.parse(text), bounds)).toEqual({ cost, usable });
  });

  it("Infinity, which JSON cannot write but 1e400 reads as, clamps in a header too", () => {
    expect(headerCost("Infinity", bounds)).toEqual({ cost: 500, usable: true, present: true });
    expect(reportedCost(Infinity, bounds)).toEqual({ cost: 500, usable: true });
    expect(headerCost("-Infinity", bounds)).toEqual({ cost: 40, usable: false, present: true });
  });

  it("without max, the clamp is 1e9", () => {
    expect(headerCost("1e308", { missing: 1 }).cost).toBe(1e9);
    expect(reportedCost(2 ** 53 + 1, { missing: 1 }).cost).toBe(1e9);
  });

  it("what is not a number is `missing`: absent, text, hex, NaN, null", () => {
    expect(headerCost(null, bounds)).toEqual({ cost: 40, usable: false, present: false });
    for (const text of ["", "twelve", "0x10", "12 tokens", "NaN", "1e", "+5"]) expect(headerCost(text, bounds)).toMatchObject({ cost: 40, usable: false });
    for (const value of [undefined, null, "12", Number.NaN, [12], { n: 12 }]) expect(reportedCost(value, bounds)).toEqual({ cost: 40, usable: false });
  });

  it("a middleware's cost function is read by the same rule (missing 1)", () => {
    const logged: Record<string, unknown>[] = [];
    const warnings = new UsageWarnings((entry) => logged.push(entry), 0);
    expect([1e308, Infinity, 2 ** 53 + 1, 42, -1, 0.5].map((value) => checkedCost(value, "cost.response", warnings, "mw"))).toEqual([1e9, 1e9, 1e9, 42, 1, 1]);
    expect(logged).toHaveLength(2);
  });
});
