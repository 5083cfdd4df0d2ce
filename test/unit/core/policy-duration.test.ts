import { describe, expect, it } from "vitest";
import { MAX_DURATION_MS, parseDurationMs } from "../../../src/core/duration.js";
import { describeValue } from "../../../src/core/validation.js";

describe("parseDurationMs", () => {
  it.each([
    ["250ms", 250],
    ["10s", 10_000],
    ["1m", 60_000],
    ["1h", 3_600_000],
    ["1d", 86_400_000],
    ["1.5s", 1500],
    [" 2m ", 120_000],
    ["366d", 366 * 86_400_000],
    [1, 1],
    [60_000, 60_000],
    [MAX_DURATION_MS, MAX_DURATION_MS],
  ])("reads %j as %i ms", (input, ms) => {
    expect(parseDurationMs(input)).toEqual({ ok: true, ms });
  });

  it("has 366 days as its upper bound", () => {
    expect(MAX_DURATION_MS).toBe(31_622_400_000);
  });

  it.each([
    ["1w", 'must be a duration like "250ms", "10s", "1m", "1h", "1d" or a number of ms, got "1w"'],
    ["10", 'got "10"'],
    ["10 s", 'got "10 s"'],
    ["-1s", 'got "-1s"'],
    ["", 'got ""'],
    ["0ms", 'must be between 1ms and 366d, got "0ms"'],
    [0, "must be between 1ms and 366d, got 0"],
    [-5, "must be between 1ms and 366d, got -5"],
    ["367d", 'must be between 1ms and 366d, got "367d"'],
    [MAX_DURATION_MS + 1, "must be between 1ms and 366d, got 31622400001"],
    ["0.5ms", 'must be a whole number of milliseconds, got "0.5ms"'],
    [1.5, "must be a whole number of milliseconds, got 1.5"],
    [Number.NaN, "must be a whole number of milliseconds, got NaN"],
    [Number.POSITIVE_INFINITY, "got Infinity"],
    [null, 'must be a duration like "10s" or a number of ms, got null'],
    [true, "got true"],
    [undefined, "got nothing"],
  ])("refuses %j: %s", (input, error) => {
    const result = parseDurationMs(input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(error);
  });
});

describe("describe (values in error messages)", () => {
  it("renders values as JSON and shortens long ones", () => {
    expect(describeValue("1s")).toBe('"1s"');
    expect(describeValue(undefined)).toBe("nothing");
    expect(describeValue(Number.NEGATIVE_INFINITY)).toBe("-Infinity");
    const long = describeValue("x".repeat(200));
    expect(long).toHaveLength(80);
    expect(long.endsWith("...")).toBe(true);
  });
});
