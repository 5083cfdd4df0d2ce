import { describe, expect, it } from "vitest";
import { routeConfig } from "./route-config.js";
import { chargesOf, reservationsOf, type UsageCost } from "../../../src/gateway/measures.js";
import { microdollarsOf, priceOf } from "../../../src/gateway/prices.js";

// A "usage" cost (docs/counting.md, "Usage presets", "Measures", "Prices"): what the parser
// makes of it, the error naming the field for each bad value, and what an answer costs.
const policies = [
  { name: "itpm", algorithm: "token-bucket", limit: 10_000, period: "1m" },
  { name: "otpm", algorithm: "token-bucket", limit: 2000, period: "1m" },
  { name: "rpm", algorithm: "fixed-window", limit: 50, period: "1m" },
  { name: "usd", algorithm: "fixed-window", limit: 50_000_000, period: "1d" },
  { name: "slots", algorithm: "concurrency", limit: 4 },
];
const route = { match: { path: "/v1/messages" }, key: "header:x-api-key", policies: ["itpm", "otpm", "rpm", "usd", "slots"] };
const measures = { itpm: "input", otpm: "output", rpm: "requests", usd: "microdollars" };
const prices = { "claude-sonnet-4": { input: 3, output: 15 }, "claude-3-5-haiku": { input: 0.8, output: 4 } };
const { load, errorOf } = routeConfig(policies, route);
const costOf = (fields: Record<string, unknown>) => load(fields).counting!.cost as UsageCost;

describe("usage cost: config", () => {
  it("a preset with measures and prices: every rate policy has its measure, prices kept in millionths; missing defaults to the token policies' largest capacity", () => {
    const cost = costOf({ cost: { usage: "anthropic", measures, prices } });
    expect(cost.preset).toBe("anthropic");
    expect(Object.fromEntries(cost.measureOf)).toEqual(measures);
    expect(cost.bounds).toEqual({ missing: 10_000 });
    expect(cost.prices!.models.get("claude-sonnet-4")).toEqual({ input: 3_000_000, output: 15_000_000 });
    expect(cost.prices!.dearest).toEqual({ input: 3_000_000, output: 15_000_000 });
    // Left out of the map: `measure`, by default total.
    expect(Object.fromEntries(costOf({ cost: { usage: "openai", measures: { rpm: "requests" }, max: 4000 } }).measureOf)).toEqual({ itpm: "total", otpm: "total", rpm: "requests", usd: "total" });
    expect(costOf({ cost: { usage: "openai", measure: "output" } }).measure).toBe("output");
  });

  it.each([
    [{ cost: { usage: "gemini" } }, /^routes\.0\.cost\.usage: must be one of "openai", "openai-responses", "anthropic", got "gemini"/],
    [{ cost: { usage: "openai", responseJson: "usage.total_tokens" } }, /^routes\.0\.cost: must name exactly one of .* got usage and responseJson/],
    [{ cost: { usage: "openai", measures: { itpm: "prompt" } } }, /^routes\.0\.cost\.measures\.itpm: must be one of "input", "output", "total", "requests", "microdollars", got "prompt"/],
    [{ cost: { usage: "openai", measure: "dollars" } }, /^routes\.0\.cost\.measure: must be one of/],
    [{ cost: { usage: "openai", measures: { daily: "input" } } }, /^routes\.0\.cost\.measures\.daily: is not a rate policy of this route \(its policies: itpm, otpm, rpm, usd\)/],
    [{ cost: { usage: "openai", measures: { slots: "input" } } }, /^routes\.0\.cost\.measures\.slots: is not a rate policy/],
    [{ cost: { usage: "openai", measures: { itpm: "requests", otpm: "requests", rpm: "requests", usd: "requests" } } }, /^routes\.0\.cost\.measures: charges every policy "requests"/],
    [{ cost: { usage: "openai", measures } }, /^routes\.0\.cost\.prices: is required when a policy is charged "microdollars"/],
    [{ cost: { usage: "openai", prices } }, /^routes\.0\.cost\.prices: is for a policy charged "microdollars": no policy of the route is/],
    [{ cost: { usage: "openai", measures, prices: { "gpt-4o": { input: -1, output: 10 } } } }, /^routes\.0\.cost\.prices\.gpt-4o\.input: must be a number of USD per million tokens from 0 to 100000, got -1/],
    [{ cost: { usage: "openai", measures, prices: { "gpt-4o": { input: 2.5 } } } }, /^routes\.0\.cost\.prices\.gpt-4o\.output: must be a number of USD per million tokens/],
    [{ cost: { usage: "openai", measures, prices: { "gpt-4o": { input: 2.5, output: 10, cached: 1 } } } }, /^routes\.0\.cost\.prices\.gpt-4o\.cached: is not a known field/],
    [{ cost: { usage: "openai", measures, prices: { "gpt-4o": { input: 0.0000001, output: 10 } } } }, /^routes\.0\.cost\.prices\.gpt-4o\.input: must have at most 6 decimals/],
    [{ cost: { usage: "openai", measures, prices: {} } }, /^routes\.0\.cost\.prices: must name at least one model/],
    [{ cost: { usage: "openai", measures, prices: "cheap" } }, /^routes\.0\.cost\.prices: must be an object of models and prices/],
    [{ cost: { usage: "openai", measures: { itpm: "requests", otpm: "requests", rpm: "requests", usd: "microdollars" }, prices } }, /^routes\.0\.cost\.max: is required when no policy of the route is charged tokens/],
    [{ cost: { usage: "openai", max: 100, missing: 200 } }, /^routes\.0\.cost\.missing: must not be above max \(100\), got 200/],
    [{ cost: { usage: "openai", path: "usage" } }, /^routes\.0\.cost\.path: is not a known field of a "usage" cost/],
    [{ cost: { usage: "openai" }, estimate: { input: 100 } }, /^routes\.0\.estimate\.output: is required: an estimate in parts gives both/],
    [{ cost: { usage: "openai" }, estimate: { input: 100, output: -1 } }, /^routes\.0\.estimate\.output: must be an integer from 0 to 1000000000/],
    [{ cost: { usage: "openai" }, estimate: { input: 100, output: 5, total: 105 } }, /^routes\.0\.estimate\.total: is not a known field/],
    [{ cost: { usage: "openai", max: 1000 }, estimate: 2000 }, /^routes\.0\.estimate: must not be above the cost's max \(1000\)/],
    [{ cost: { usage: "openai" }, onLimit: "delay", maxDelayMs: 100 }, /^routes\.0\.onLimit: must be "reject" when answers are counted/],
    [{ providerHeaders: { style: "google", requests: "rpm" } }, /^routes\.0\.providerHeaders\.style: must be "openai" or "anthropic", got "google"/],
    [{ providerHeaders: { style: "openai", tokens: "daily" } }, /^routes\.0\.providerHeaders\.tokens: must name a rate policy of this route \(itpm, otpm, rpm, usd\), got "daily"/],
    [{ providerHeaders: { style: "openai", inputTokens: "itpm" } }, /^routes\.0\.providerHeaders\.inputTokens: is Anthropic's/],
    [{ providerHeaders: { style: "anthropic" } }, /^routes\.0\.providerHeaders: must name the policy of at least one family/],
    [{ providerHeaders: { style: "anthropic", limits: "rpm" } }, /^routes\.0\.providerHeaders\.limits: is not a known field/],
  ])("refused at load, naming the field: %j", (fields, message) => {
    expect(errorOf(fields)).toMatch(message);
  });

  it("an estimate: one number (the whole request's tokens) or parts; a part's missing is the cost's", () => {
    expect(load({ cost: { usage: "openai" }, estimate: 3000 }).counting?.estimate).toEqual({ from: "constant", cost: 3000 });
    expect(load({ cost: { usage: "openai", measures, prices }, estimate: { input: 1000, output: { requestHeader: "x-max-tokens" } } }).counting?.estimates).toEqual({
      input: { from: "constant", cost: 1000 },
      output: { from: "requestHeader", name: "x-max-tokens", bounds: { missing: 10_000 } },
    });
  });
});

describe("usage cost: what an answer costs", () => {
  const cost = costOf({ cost: { usage: "anthropic", measures, prices: { ...prices, default: { input: 1, output: 5 } }, max: 8000 } });
  const noDefault = costOf({ cost: { usage: "anthropic", measures, prices, max: 8000 } });

  it("each measure; microdollars at the answer's model's price, found without its date suffix, else default, else the dearest", () => {
    expect(chargesOf({ input: 1000, output: 200, model: "claude-sonnet-4-20250514" }, cost, false)).toEqual({ charges: { input: 1000, output: 200, total: 1200, requests: 1, microdollars: 6000 } });
    expect(chargesOf({ input: 1000, output: 200, model: "claude-opus-9" }, cost, false).charges.microdollars).toBe(2000);
    const unknown = chargesOf({ input: 1000, output: 200, model: "claude-opus-9" }, noDefault, false);
    expect(unknown.charges.microdollars).toBe(6000);
    expect(unknown.unread).toMatch(/charged the dearest prices/);
  });

  it("a part not read costs missing (max) tokens, priced too; a cut read costs every token measure at least missing", () => {
    expect(chargesOf({ input: 25, model: "claude-3-5-haiku" }, cost, false).charges).toEqual({ input: 25, output: 8000, total: 8000, requests: 1, microdollars: Math.ceil(25 * 0.8 + 8000 * 4) });
    expect(chargesOf({ input: "lots", output: 3, model: "claude-3-5-haiku" }, cost, false).charges.input).toBe(8000);
    expect(chargesOf({ input: 10, output: 3, model: "claude-3-5-haiku" }, cost, true).charges).toMatchObject({ input: 8000, output: 8000, total: 8000 });
    // A huge report is a huge cost, clamped to max.
    expect(chargesOf({ input: 1e308, output: 0 }, cost, false).charges.input).toBe(8000);
  });

  it("reservations: one number reserves it in every token measure and at the dearest price of any token; parts reserve each", () => {
    expect(reservationsOf(1000, cost)).toEqual({ input: 1000, output: 1000, total: 1000, requests: 1, microdollars: 15_000 });
    expect(reservationsOf({ input: 1000, output: 100 }, cost)).toEqual({ input: 1000, output: 100, total: 1100, requests: 1, microdollars: 3000 + 1500 });
  });

  it("microdollars are exact and rounded up: 9 tokens at $0.15 and 12 at $0.60 per million are 8.55, charged 9", () => {
    expect(microdollarsOf(9, 12, { input: 150_000, output: 600_000 })).toBe(9);
    expect(microdollarsOf(1000, 0, { input: 150_000, output: 0 })).toBe(150);
    expect(microdollarsOf(1e9, 1e9, { input: 100_000e6, output: 100_000e6 })).toBe(1e9);
    expect(priceOf(cost.prices!, 42).by).toBe("default");
  });
});
