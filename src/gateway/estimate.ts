import { ValidationError, describeValue } from "../core/validation.js";
import { type CostBounds, MAX_COST } from "../http/counting.js";

/**
 * A route's `estimate` (docs/counting.md, "Reserve, then settle"): what a request whose cost
 * the answer reports is reserved at before it is forwarded. A constant, or a request header
 * (absent or not a count: `missing`, by default the cost's own `missing`, so a client that
 * leaves it out is reserved the most it could be charged). Clamped to the cost's `max`.
 */
export type EstimateSource = { from: "constant"; cost: number } | { from: "requestHeader"; name: string; bounds: CostBounds };

/** What parseEstimate needs of the route's parsed cost (src/gateway/counting.ts's CostSource). */
interface RouteCost {
  from: string;
  bounds?: CostBounds;
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FORMS = 'an integer from 0 to 1000000000, or { "requestHeader": "x-max-tokens" } (and an optional "missing")';

const isCount = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_COST;

/**
 * Validates `estimate` against the route's cost (`cost`: the parsed one, from the answer).
 * Errors name the field: `routes.0.estimate: …`.
 */
export function parseEstimate(input: unknown, cost: RouteCost, field: string): EstimateSource {
  if ((cost.from !== "responseHeader" && cost.from !== "responseJson") || !cost.bounds) {
    throw new ValidationError(field, 'is for a route whose cost the answer reports ("cost": { "responseJson" } or { "responseHeader" }): a cost known before forwarding is checked as it is');
  }
  const { max } = cost.bounds;
  const aboveMax = (value: number, at: string) => {
    if (max !== undefined && value > max) throw new ValidationError(at, `must not be above the cost's max (${max}): a request is never charged more, got ${value}`);
  };
  if (typeof input === "number") {
    if (!isCount(input)) throw new ValidationError(field, `must be ${FORMS}, got ${describeValue(input)}`);
    aboveMax(input, field);
    return { from: "constant", cost: input };
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) throw new ValidationError(field, `must be ${FORMS}, got ${describeValue(input)}`);
  const fields = input as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (name === "requestJson") throw new ValidationError(`${field}.requestJson`, 'is not supported yet (the gateway does not read request bodies): use a constant or "requestHeader"');
    if (name !== "requestHeader" && name !== "missing") throw new ValidationError(`${field}.${name}`, `is not a known field (an estimate is ${FORMS})`);
  }
  const name = fields.requestHeader;
  if (typeof name !== "string" || !HEADER_NAME.test(name)) throw new ValidationError(`${field}.requestHeader`, `must be a header name like "x-max-tokens", got ${describeValue(name)}`);
  let missing = cost.bounds.missing;
  if (fields.missing !== undefined) {
    if (!isCount(fields.missing)) throw new ValidationError(`${field}.missing`, `must be an integer from 0 to ${MAX_COST}, got ${describeValue(fields.missing)}`);
    aboveMax(fields.missing, `${field}.missing`);
    missing = fields.missing;
  }
  const bounds: CostBounds = max === undefined ? { missing } : { max, missing };
  return { from: "requestHeader", name: name.toLowerCase(), bounds };
}
