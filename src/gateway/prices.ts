import { ValidationError, describeValue } from "../core/validation.js";
import { MAX_COST } from "../http/counting.js";

/**
 * A route's price table (docs/counting.md, "Prices"): US dollars per million input and output
 * tokens, per model, as the providers publish them: `{ "gpt-4o": { "input": 2.5, "output": 10 },
 * "default": { "input": 5, "output": 15 } }`. A price of P dollars per million tokens is P
 * microdollars per token, so a charge in microdollars is exact arithmetic: prices are kept in
 * millionths (a price has at most 6 decimals) and the product rounded up, in BigInt.
 */
export interface Price {
  /** USD per million tokens, in millionths of a dollar (2.5 → 2500000). */
  input: number;
  output: number;
}

export interface Prices {
  models: ReadonlyMap<string, Price>;
  /** The price of a model the table does not name; absent: the dearest of the table. */
  default?: Price;
  /** The highest input and the highest output price of the table (a reservation's, and an unknown model's without `default`). */
  dearest: Price;
}

/** $100,000 per million tokens: past any published price, and a bound that keeps a charge's arithmetic small. */
const MAX_PRICE = 100_000;
const MAX_MODELS = 1000;
/** A dated snapshot's suffix (`gpt-4o-2024-08-06`, `claude-3-5-sonnet-20241022`): looked up without it too. */
const DATE_SUFFIX = /-(?:\d{4}-\d{2}-\d{2}|\d{8})$/;

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);

function parsePrice(input: unknown, field: string): Price {
  if (!isObject(input)) throw new ValidationError(field, `must be an object like { "input": 2.5, "output": 10 } (USD per million tokens), got ${describeValue(input)}`);
  for (const name of Object.keys(input)) if (name !== "input" && name !== "output") throw new ValidationError(`${field}.${name}`, 'is not a known field (a price is { "input", "output" }, USD per million tokens)');
  const part = (name: "input" | "output") => {
    const value = input[name];
    if (typeof value !== "number" || !Number.isFinite(value) || value < 0 || value > MAX_PRICE) {
      throw new ValidationError(`${field}.${name}`, `must be a number of USD per million tokens from 0 to ${MAX_PRICE}, got ${describeValue(value)}`);
    }
    const millionths = Math.round(value * 1e6);
    if (Math.abs(millionths - value * 1e6) > 1e-6 * Math.max(1, value * 1e6)) throw new ValidationError(`${field}.${name}`, `must have at most 6 decimals, got ${value}`);
    return millionths;
  };
  return { input: part("input"), output: part("output") };
}

/** Validates a price table; errors name the field: `routes.0.cost.prices.gpt-4o.input`. */
export function parsePrices(input: unknown, field: string): Prices {
  if (!isObject(input)) throw new ValidationError(field, `must be an object of models and prices, like { "gpt-4o": { "input": 2.5, "output": 10 } }, got ${describeValue(input)}`);
  const names = Object.keys(input);
  if (names.length === 0) throw new ValidationError(field, "must name at least one model (or a \"default\")");
  if (names.length > MAX_MODELS) throw new ValidationError(field, `must name at most ${MAX_MODELS} models, got ${names.length}`);
  const models = new Map<string, Price>();
  let fallback: Price | undefined;
  for (const name of names) {
    const price = parsePrice(input[name], `${field}.${name}`);
    if (name === "default") fallback = price;
    else models.set(name, price);
  }
  const all = [...models.values(), ...(fallback ? [fallback] : [])];
  const dearest = { input: Math.max(...all.map((one) => one.input)), output: Math.max(...all.map((one) => one.output)) };
  return { models, ...(fallback ? { default: fallback } : {}), dearest };
}

/** How an answer's model was priced: named in the table, by its `default`, or (neither) at the dearest prices. */
export type PricedBy = "model" | "default" | "dearest";

/** The price of `model` (the answer's `model` field, any value): exact, then without a date suffix, then `default`, then the dearest. */
export function priceOf(prices: Prices, model: unknown): { price: Price; by: PricedBy } {
  if (typeof model === "string") {
    const exact = prices.models.get(model) ?? prices.models.get(model.replace(DATE_SUFFIX, ""));
    if (exact) return { price: exact, by: "model" };
  }
  if (prices.default) return { price: prices.default, by: "default" };
  return { price: prices.dearest, by: "dearest" };
}

/** ⌈input × input price + output × output price⌉ microdollars, clamped to the largest cost. */
export function microdollarsOf(inputTokens: number, outputTokens: number, price: Price): number {
  const picodollars = BigInt(inputTokens) * BigInt(price.input) + BigInt(outputTokens) * BigInt(price.output);
  const micro = (picodollars + 999_999n) / 1_000_000n;
  return micro > BigInt(MAX_COST) ? MAX_COST : Number(micro);
}
