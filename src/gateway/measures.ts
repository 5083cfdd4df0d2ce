import { capacityOf } from "../core/algorithms.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { type CostBounds, MAX_COST, reportedCost } from "../http/counting.js";
import type { BodyFields } from "./body-fields.js";
import { type Prices, microdollarsOf, parsePrices, priceOf } from "./prices.js";
import { USAGE_PRESETS, type ReportedUsage, type UsagePreset } from "./usage-presets.js";

/**
 * A preset cost (docs/counting.md, "Measures"): `"cost": { "usage": "openai", "measures": {
 * "itpm": "input", "otpm": "output", "rpm": "requests", "monthly-usd": "microdollars" } }`.
 * Each rate policy of the route is charged one measure of the answer:
 * - `input`, `output`, `total`: tokens (total: the answer's own, else input + output);
 * - `requests`: 1 per request, checked before forwarding like a plain route (never settled);
 * - `microdollars`: millionths of a US dollar, from `prices` (USD per million tokens, so a
 *   token costs its price in microdollars): ⌈input × input price + output × output price⌉.
 * Policies the map leaves out are charged `measure` (default `total`).
 */
export const MEASURES = ["input", "output", "total", "requests", "microdollars"] as const;
export type Measure = (typeof MEASURES)[number];
export type Charges = Record<Measure, number>;

export interface UsageCost {
  from: "usage";
  preset: UsagePreset;
  /** Token measures' `max` and `missing` (missing also prices an unread part in microdollars). */
  bounds: CostBounds;
  /** Each rate policy's measure, by name. */
  measureOf: ReadonlyMap<string, Measure>;
  /** The default measure of a policy the map leaves out. */
  measure: Measure;
  prices?: Prices;
  /**
   * The model the request's body names (its top-level `model`, REQUEST_MODEL_PATH), set per
   * request by pricedByRequest when the route reads the body: what a reservation is priced at,
   * and an answer that names no model of its own.
   */
  requestModel?: string;
}

/** Where OpenAI's and Anthropic's request bodies name the model (`"model": "gpt-4o-mini"`). */
export const REQUEST_MODEL_PATH: readonly string[] = ["model"];

/**
 * The route's cost for one request whose body was read (`body`: its fields, undefined when the
 * route reads none): with a price table and a `model` string in the body, a copy that prices by
 * it (UsageCost.requestModel); else the cost itself. A model named twice is no model (the
 * origin may read either): the reservation stays at the dearest prices.
 */
export function pricedByRequest(cost: UsageCost, body: BodyFields | undefined): UsageCost {
  if (!cost.prices || !body) return cost;
  const model = body.field(REQUEST_MODEL_PATH);
  return model.found && typeof model.value === "string" ? { ...cost, requestModel: model.value } : cost;
}

const FIELDS = ["usage", "measure", "measures", "prices", "max", "missing", "maxReadBytes", "maxReadMs"];
const TOKEN_MEASURES: readonly Measure[] = ["input", "output", "total"];
const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
const isCount = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_COST;

function parseMeasure(value: unknown, field: string): Measure {
  if (typeof value === "string" && (MEASURES as readonly string[]).includes(value)) return value as Measure;
  throw new ValidationError(field, `must be one of ${MEASURES.map((name) => `"${name}"`).join(", ")}, got ${describeValue(value)}`);
}

function parseBound(input: Record<string, unknown>, name: "max" | "missing", field: string): number | undefined {
  const value = input[name];
  if (value === undefined) return undefined;
  if (!isCount(value)) throw new ValidationError(`${field}.${name}`, `must be an integer from 0 to ${MAX_COST}, got ${describeValue(value)}`);
  return value;
}

/** Validates a `{ "usage": … }` cost against the route's policies. Errors name the field: `routes.0.cost.measures.itpm`. */
export function parseUsageCost(input: Record<string, unknown>, policies: readonly Policy[], field: string): UsageCost {
  for (const name of Object.keys(input)) {
    if (!FIELDS.includes(name)) throw new ValidationError(`${field}.${name}`, `is not a known field of a "usage" cost (${FIELDS.map((one) => `"${one}"`).join(", ")})`);
  }
  const preset = input.usage;
  if (typeof preset !== "string" || !(USAGE_PRESETS as readonly string[]).includes(preset)) {
    throw new ValidationError(`${field}.usage`, `must be one of ${USAGE_PRESETS.map((name) => `"${name}"`).join(", ")}, got ${describeValue(preset)}`);
  }
  const measure = input.measure === undefined ? "total" : parseMeasure(input.measure, `${field}.measure`);
  const rated = policies.filter((policy) => policy.algorithm !== "concurrency");
  const measureOf = new Map<string, Measure>(rated.map((policy) => [policy.name, measure]));
  if (input.measures !== undefined) {
    if (!isObject(input.measures)) throw new ValidationError(`${field}.measures`, `must be an object of policy names and measures, like { "itpm": "input" }, got ${describeValue(input.measures)}`);
    for (const [name, value] of Object.entries(input.measures)) {
      if (!measureOf.has(name)) throw new ValidationError(`${field}.measures.${name}`, `is not a rate policy of this route (its policies: ${rated.map((policy) => policy.name).join(", ")})`);
      measureOf.set(name, parseMeasure(value, `${field}.measures.${name}`));
    }
  }
  const measures = new Set(measureOf.values());
  const charged = [...measures].some((one) => one !== "requests");
  if (!charged) throw new ValidationError(`${field}.measures`, 'charges every policy "requests": nothing is read from the answer; drop "cost" for a plain route');
  let prices: Prices | undefined;
  if (input.prices !== undefined) {
    if (!measures.has("microdollars")) throw new ValidationError(`${field}.prices`, 'is for a policy charged "microdollars": no policy of the route is');
    prices = parsePrices(input.prices, `${field}.prices`);
  } else if (measures.has("microdollars")) {
    throw new ValidationError(`${field}.prices`, 'is required when a policy is charged "microdollars": the USD per million input and output tokens of each model, like { "gpt-4o": { "input": 2.5, "output": 10 } }');
  }
  const max = parseBound(input, "max", field);
  // Nothing less than a whole window of the token policies, or `max`: hiding usage never costs less than showing it.
  const tokenPolicies = rated.filter((policy) => TOKEN_MEASURES.includes(measureOf.get(policy.name)!));
  if (max === undefined && tokenPolicies.length === 0 && input.missing === undefined) {
    throw new ValidationError(`${field}.max`, "is required when no policy of the route is charged tokens: it bounds the tokens an answer may report, and what an answer without usage costs (missing)");
  }
  const capacity = Math.min(MAX_COST, Math.max(1, ...tokenPolicies.map((policy) => capacityOf(policy))));
  const missing = parseBound(input, "missing", field) ?? max ?? capacity;
  if (max !== undefined && missing > max) throw new ValidationError(`${field}.missing`, `must not be above max (${max}), got ${missing}`);
  const bounds: CostBounds = max === undefined ? { missing } : { max, missing };
  return { from: "usage", preset: preset as UsagePreset, bounds, measureOf, measure, ...(prices ? { prices } : {}) };
}

/** One token value's cost, and whether it was read. */
function tokens(value: unknown, bounds: CostBounds): { cost: number; usable: boolean } {
  return value === undefined ? { cost: bounds.missing, usable: false } : reportedCost(value, bounds);
}

export interface ChargeResult {
  charges: Charges;
  /** What could not be read, for the log (undefined: all of it was). */
  unread?: string;
}

/**
 * What an answer costs in every measure. A part that was not read (absent, not a count) costs
 * `missing` tokens; `cut` (the read stopped at a bound before the body's end): every token
 * measure costs at least `missing`, as a single cost does. Microdollars price the model the
 * answer names, else the one the request named (requestModel: the provider says what ran, so
 * the answer's wins), looked up in prices.ts (exact, then without a date suffix, then `default`,
 * else the dearest of the table), with an unread part at `missing` tokens.
 */
export function chargesOf(usage: ReportedUsage, cost: UsageCost, cut: boolean): ChargeResult {
  const { bounds } = cost;
  const input = tokens(usage.input, bounds);
  const output = tokens(usage.output, bounds);
  let total = tokens(usage.total, bounds);
  if (!total.usable && input.usable && output.usable) total = { cost: Math.min(input.cost + output.cost, bounds.max ?? MAX_COST), usable: true };
  const floor = (part: { cost: number }) => (cut ? Math.max(part.cost, bounds.missing) : part.cost);
  const unread = [!input.usable ? "input" : "", !output.usable ? "output" : "", !total.usable ? "total" : ""].filter(Boolean);
  const charges: Charges = { input: floor(input), output: floor(output), total: floor(total), requests: 1, microdollars: 0 };
  if (cost.prices) {
    const model = typeof usage.model === "string" ? usage.model : (cost.requestModel ?? usage.model);
    const { price, by } = priceOf(cost.prices, model);
    charges.microdollars = microdollarsOf(charges.input, charges.output, price);
    if (by === "dearest") unread.push(`a model in the price table (${describeValue(model)}: charged the dearest prices)`);
  }
  return unread.length === 0 ? { charges } : { charges, unread: unread.join(", ") };
}

/**
 * What a request reserves in every measure, from its estimate: one number (the tokens of the
 * whole request: each token measure reserves it all, microdollars at the dearer of its two
 * prices), or `{ input, output }` (total: their sum; microdollars: each at its price). The
 * prices are the request's model's (requestModel, looked up as an answer's is) when its body
 * named one, else the table's dearest: the model is not known before the answer. Requests: 1.
 */
export function reservationsOf(estimate: number | { input: number; output: number }, cost: UsageCost): Charges {
  const price = cost.prices && (cost.requestModel === undefined ? cost.prices.dearest : priceOf(cost.prices, cost.requestModel).price);
  if (typeof estimate === "number") {
    const top = price ? Math.max(price.input, price.output) : 0;
    return { input: estimate, output: estimate, total: estimate, requests: 1, microdollars: price ? microdollarsOf(estimate, 0, { input: top, output: top }) : 0 };
  }
  const total = Math.min(estimate.input + estimate.output, MAX_COST);
  return { input: estimate.input, output: estimate.output, total, requests: 1, microdollars: price ? microdollarsOf(estimate.input, estimate.output, price) : 0 };
}
