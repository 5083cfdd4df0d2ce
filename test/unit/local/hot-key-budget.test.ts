import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import { batchSize, newHotKey } from "../../../src/local/hot-key.js";

// A token batch is one store check: its cost stays within a check's (0 … 1e9), even for a
// money budget of 1e15 whose share (0.5) would be 5e14 units.
describe("token batches of a budget past 1e9", () => {
  it("ask for at most 1e9 units, however fast the key spends", () => {
    const entry = newHotKey(parsePolicy({ name: "usd", algorithm: "fixed-window", limit: 1e15, calendar: "month", local: { share: 0.5 } }, "p"));
    batchSize(entry, 1, 0, { batchTargetMs: 100 });
    entry.demandUnits = 1e14;
    expect(batchSize(entry, 1, 10, { batchTargetMs: 100 })).toBe(1e9);
  });
});
