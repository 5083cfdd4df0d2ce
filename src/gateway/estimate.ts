import { ValidationError, describeValue } from "../core/validation.js";
import { type CostBounds, MAX_COST, reportedCost } from "../http/counting.js";
import { splitJsonPath } from "../overrides/key-source.js";
import type { BodyFields } from "./body-fields.js";

/**
 * A route's `estimate` (docs/counting.md, "Reserve, then settle"): what a request whose cost
 * the answer reports is reserved at before it is forwarded. A constant, or a request header
 * (absent or not a count: `missing`, by default the cost's own `missing`, so a client that
 * leaves it out is reserved the most it could be charged). Clamped to the cost's `max`.
 */
export type EstimateSource =
  | { from: "constant"; cost: number }
  | { from: "requestHeader"; name: string; bounds: CostBounds }
  /** The output bound at the first of `paths` the body has, plus its bytes × `promptTokensPerByte` (bodyEstimate). */
  | { from: "requestJson"; paths: string[][]; promptTokensPerByte: number; bounds: CostBounds };

/**
 * A prompt's tokens per byte of its request body when the config does not say: 0.25, one token
 * for 4 bytes, OpenAI's rule of thumb for English text (a token is about 4 characters). A body
 * holds more than its prompt (the JSON around it, escapes), so for English this errs high, as
 * an estimate should; CJK text (3 UTF-8 bytes a character, about a token each) runs near 0.33.
 */
export const DEFAULT_PROMPT_TOKENS_PER_BYTE = 0.25;
/** A token is at least a byte of text: more than 1 token a byte is no prompt's. */
const MAX_TOKENS_PER_BYTE = 1;
const MAX_ESTIMATE_PATHS = 8;

/** What parseEstimate needs of the route's parsed cost (src/gateway/counting.ts's CostSource). */
interface RouteCost {
  from: string;
  bounds?: CostBounds;
}

const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const FORMS = 'an integer from 0 to 1000000000, { "requestHeader": "x-max-tokens" } or { "requestJson": ["max_tokens", "max_completion_tokens"] } (and an optional "missing"; "promptTokensPerByte" with "requestJson")';

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
    if (!["requestHeader", "requestJson", "promptTokensPerByte", "missing"].includes(name)) throw new ValidationError(`${field}.${name}`, `is not a known field (an estimate is ${FORMS})`);
  }
  if ((fields.requestHeader === undefined) === (fields.requestJson === undefined)) {
    throw new ValidationError(field, `must name exactly one of "requestHeader" or "requestJson", got ${fields.requestHeader === undefined ? "none" : "both"}`);
  }
  let missing = cost.bounds.missing;
  if (fields.missing !== undefined) {
    if (!isCount(fields.missing)) throw new ValidationError(`${field}.missing`, `must be an integer from 0 to ${MAX_COST}, got ${describeValue(fields.missing)}`);
    aboveMax(fields.missing, `${field}.missing`);
    missing = fields.missing;
  }
  const bounds: CostBounds = max === undefined ? { missing } : { max, missing };
  if (fields.requestJson !== undefined) return parseRequestJson(fields, bounds, field);
  if (fields.promptTokensPerByte !== undefined) throw new ValidationError(`${field}.promptTokensPerByte`, 'is for a "requestJson" estimate, which reads the body');
  const name = fields.requestHeader;
  if (typeof name !== "string" || !HEADER_NAME.test(name)) throw new ValidationError(`${field}.requestHeader`, `must be a header name like "x-max-tokens", got ${describeValue(name)}`);
  return { from: "requestHeader", name: name.toLowerCase(), bounds };
}

function parseRequestJson(fields: Record<string, unknown>, bounds: CostBounds, field: string): EstimateSource {
  const at = `${field}.requestJson`;
  const raw = typeof fields.requestJson === "string" ? [fields.requestJson] : fields.requestJson;
  if (!Array.isArray(raw) || raw.length === 0 || raw.length > MAX_ESTIMATE_PATHS) {
    throw new ValidationError(at, `must be a dotted path or a list of 1 to ${MAX_ESTIMATE_PATHS} of them (the first the body has is read), like ["max_tokens", "max_completion_tokens"], got ${describeValue(fields.requestJson)}`);
  }
  const paths = raw.map((item: unknown, i) => {
    const where = typeof fields.requestJson === "string" ? at : `${at}.${i}`;
    if (typeof item !== "string") throw new ValidationError(where, `must be a dotted path like "max_tokens", got ${describeValue(item)}`);
    const path = splitJsonPath(item);
    if (typeof path === "string") throw new ValidationError(where, path);
    return path;
  });
  if (new Set(paths.map((path) => path.join("."))).size !== paths.length) throw new ValidationError(at, `names one path twice, got ${describeValue(fields.requestJson)}`);
  const rate = fields.promptTokensPerByte ?? DEFAULT_PROMPT_TOKENS_PER_BYTE;
  if (typeof rate !== "number" || !Number.isFinite(rate) || rate < 0 || rate > MAX_TOKENS_PER_BYTE) {
    throw new ValidationError(`${field}.promptTokensPerByte`, `must be a number from 0 to ${MAX_TOKENS_PER_BYTE} (tokens a byte of the body; 0: the output bound alone), got ${describeValue(rate)}`);
  }
  return { from: "requestJson", paths, promptTokensPerByte: rate, bounds };
}

/**
 * A `requestJson` estimate for one request (docs/counting.md, "An estimate from the body"): the
 * output bound, the first of its paths the body has (absent or `null`: the next), plus the
 * body's bytes × promptTokensPerByte, rounded up, clamped to the cost's `max`. A bound that is
 * no whole number from 0 (negative, fractional, a string), a field named twice, or a body
 * without fields (too long, not JSON, none): `missing`. A huge bound is clamped to `max`.
 * `unusable`: the value that was there but could not be read, for the log.
 */
export function bodyEstimate(source: Extract<EstimateSource, { from: "requestJson" }>, body: BodyFields): { cost: number; unusable?: unknown } {
  const { bounds } = source;
  if (body.bytes === undefined || body.reason !== undefined) return { cost: bounds.missing };
  for (const path of source.paths) {
    const field = body.field(path);
    if (!field.found) {
      if (field.repeated) return { cost: bounds.missing, unusable: `${path.join(".")} named twice` };
      continue;
    }
    if (field.value === null) continue;
    const bound = reportedCost(field.value, { missing: -1 });
    if (!bound.usable) return { cost: bounds.missing, unusable: field.value };
    const total = bound.cost + Math.ceil(body.bytes * source.promptTokensPerByte);
    return { cost: Math.min(total, bounds.max ?? MAX_COST, MAX_COST) };
  }
  return { cost: bounds.missing };
}
