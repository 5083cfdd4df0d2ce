import { capacityOf } from "../core/algorithms.js";
import { concurrencyPolicies } from "../core/concurrency.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { type EstimateSource, parseEstimate } from "./estimate.js";
import { type UsageCost, parseUsageCost } from "./measures.js";
import { type CostBounds, DEFAULT_MISSING_COST, MAX_COST, type StatusMatch, parseStatusList, reportedMissingDefault } from "../http/counting.js";

/**
 * A route's `count` and `cost` (docs/counting.md): which answers are counted and what each
 * costs. Costs known before forwarding (a constant, a request header) are checked as every
 * request is; costs the answer reports, and status counting, peek before forwarding and debit
 * on the answer (GatewayCore, src/http/count-limit.ts).
 */
export type CostSource =
  | { from: "constant"; cost: number }
  | { from: "requestHeader"; name: string; bounds: CostBounds }
  | { from: "responseHeader"; name: string; bounds: CostBounds }
  | { from: "responseJson"; path: readonly string[]; bounds: CostBounds }
  | UsageCost;

/**
 * How far the gateway goes to read a counted answer (docs/counting.md, "A costed answer is
 * always charged"): it reads on after its client has gone, for at most `ms` more and `bytes`
 * more bytes, and decodes at most `bytes` of an encoded body for the usage reader.
 */
export interface ReadLimits {
  bytes: number;
  ms: number;
}

/** Covers an LLM's answer: several MiB of JSON or of SSE events, and a couple of minutes of generation. */
export const DEFAULT_READ_LIMITS: Readonly<ReadLimits> = { bytes: 8 * 1024 * 1024, ms: 120_000 };
const READ_BYTES_RANGE = [1024, 1024 * 1024 * 1024] as const;
const READ_MS_RANGE = [1000, 600_000] as const;

export interface RouteCounting {
  /** Answers with these statuses are debited; undefined: every answer (a response-side cost alone). */
  count?: StatusMatch;
  cost: CostSource;
  /** The bounds of reading an answer whose client has gone, and of decoding one (`maxReadBytes`, `maxReadMs`). */
  read: ReadLimits;
  /** Peek before forwarding, debit on the answer: `count` is set or the cost comes from the answer. */
  afterAnswer: boolean;
  /** Reserve this before forwarding (a real check), settle the difference on the answer: instead of the peek. */
  estimate?: EstimateSource;
  /** A "usage" cost's estimate in two parts, `{ "input": …, "output": … }` (measures.ts reservationsOf); instead of `estimate`. */
  estimates?: { input: EstimateSource; output: EstimateSource };
}

/** At most this many segments in a `responseJson` path: usage sits a level or two deep. */
const MAX_PATH_SEGMENTS = 16;
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
const SOURCES = ["requestHeader", "responseHeader", "responseJson"] as const;
const OPTIONS = ["max", "missing", "maxReadBytes", "maxReadMs"] as const;
const COST_FORMS = 'an integer from 0 to 1000000000, or an object with one of "requestHeader", "responseHeader", "responseJson" or "usage" (and optional "max", "missing", "maxReadBytes" and "maxReadMs")';

const isObject = (value: unknown): value is Record<string, unknown> => value !== null && typeof value === "object" && !Array.isArray(value);
const isCost = (value: unknown): value is number => typeof value === "number" && Number.isInteger(value) && value >= 0 && value <= MAX_COST;

function parseCount(input: unknown, field: string): StatusMatch {
  if (!isObject(input)) throw new ValidationError(field, `must be an object like { "status": [401, 403] }, got ${describeValue(input)}`);
  for (const name of Object.keys(input)) if (name !== "status") throw new ValidationError(`${field}.${name}`, 'is not a known field (did you mean "status"?)');
  if (!("status" in input)) throw new ValidationError(`${field}.status`, "is required: the statuses whose answers are counted, like [401, 403]");
  const parsed = parseStatusList(input.status);
  if ("error" in parsed) throw new ValidationError(parsed.index === undefined ? `${field}.status` : `${field}.status.${parsed.index}`, parsed.error);
  return parsed;
}

function parseBound(input: Record<string, unknown>, name: "max" | "missing", field: string): number | undefined {
  const value = input[name];
  if (value === undefined) return undefined;
  if (!isCost(value)) throw new ValidationError(`${field}.${name}`, `must be an integer from 0 to ${MAX_COST}, got ${describeValue(value)}`);
  return value;
}

function parseJsonPath(text: string, field: string): string[] {
  const segments = text.split(".");
  if (text.length > 256 || segments.length > MAX_PATH_SEGMENTS || segments.some((segment) => segment === "")) {
    throw new ValidationError(field, `must be a dotted path of up to ${MAX_PATH_SEGMENTS} names, like "usage.total_tokens", got ${describeValue(text)}`);
  }
  return segments;
}

function parseReadLimit(input: unknown, name: "maxReadBytes" | "maxReadMs", range: readonly [number, number], field: string): number | undefined {
  if (input === undefined) return undefined;
  if (typeof input !== "number" || !Number.isInteger(input) || input < range[0] || input > range[1]) {
    throw new ValidationError(`${field}.${name}`, `must be an integer from ${range[0]} to ${range[1]}, got ${describeValue(input)}`);
  }
  return input;
}

/** A responseJson cost's `maxReadBytes` and `maxReadMs` (the defaults for every other counted route). */
function parseReadLimits(input: unknown, field: string): ReadLimits {
  if (!isObject(input)) return { ...DEFAULT_READ_LIMITS };
  const bytes = parseReadLimit(input.maxReadBytes, "maxReadBytes", READ_BYTES_RANGE, field);
  const ms = parseReadLimit(input.maxReadMs, "maxReadMs", READ_MS_RANGE, field);
  if ((bytes !== undefined || ms !== undefined) && !("responseJson" in input) && !("usage" in input)) {
    throw new ValidationError(`${field}.${bytes !== undefined ? "maxReadBytes" : "maxReadMs"}`, 'is for a "responseJson" cost, which reads the answer\'s body');
  }
  return { bytes: bytes ?? DEFAULT_READ_LIMITS.bytes, ms: ms ?? DEFAULT_READ_LIMITS.ms };
}

function parseCost(input: unknown, field: string, policies: readonly Policy[]): CostSource {
  if (typeof input === "number") {
    if (!isCost(input)) throw new ValidationError(field, `must be ${COST_FORMS}, got ${describeValue(input)}`);
    return { from: "constant", cost: input };
  }
  if (!isObject(input)) throw new ValidationError(field, `must be ${COST_FORMS}, got ${describeValue(input)}`);
  // A provider's preset (measures.ts): its own fields, checked against the route's policies.
  if ("usage" in input) {
    const other = SOURCES.find((name) => name in input);
    if (other) throw new ValidationError(field, `must name exactly one of "requestHeader", "responseHeader", "responseJson" or "usage", got usage and ${other}`);
    return parseUsageCost(input, policies, field);
  }
  const capacity = routeCapacity(policies);
  for (const name of Object.keys(input)) {
    if (!(OPTIONS as readonly string[]).includes(name) && !(SOURCES as readonly string[]).includes(name)) throw new ValidationError(`${field}.${name}`, `is not a known field (a cost is ${COST_FORMS})`);
  }
  const named = SOURCES.filter((name) => name in input);
  if (named.length !== 1) throw new ValidationError(field, `must name exactly one of "requestHeader", "responseHeader" or "responseJson", got ${named.length === 0 ? "none" : named.join(" and ")}`);
  const from = named[0]!;
  const where = `${field}.${from}`;
  const value = input[from];
  if (typeof value !== "string") throw new ValidationError(where, `must be a string, got ${describeValue(value)}`);
  const max = parseBound(input, "max", field);
  // What the origin reports, a client can make absent or try to make unreadable: by default that costs what it could have used.
  const missing = parseBound(input, "missing", field) ?? (from === "requestHeader" ? DEFAULT_MISSING_COST : reportedMissingDefault(max, capacity));
  // A missing value costing more than any reported one could would be a clamp that does not clamp.
  if (max !== undefined && missing > max) throw new ValidationError(`${field}.missing`, `must not be above max (${max}), got ${missing}`);
  const bounds: CostBounds = max === undefined ? { missing } : { max, missing };
  if (from === "responseJson") return { from, path: parseJsonPath(value, where), bounds };
  if (!HEADER_NAME.test(value)) throw new ValidationError(where, `must be a header name like "x-usage-tokens", got ${describeValue(value)}`);
  return { from, name: value.toLowerCase(), bounds };
}

/** The most a key may spend in a whole window of the route: its largest rate policy's capacity. */
function routeCapacity(policies: readonly Policy[]): number {
  let capacity = 1;
  for (const policy of policies) if (policy.algorithm !== "concurrency") capacity = Math.max(capacity, capacityOf(policy));
  return capacity;
}

/**
 * Validates a route's `count` and `cost` (undefined when it sets neither: one unit per request,
 * checked before forwarding). Errors name the field: `routes.0.cost.responseJson: ...`.
 */
export function parseRouteCounting(raw: { count?: unknown; cost?: unknown; estimate?: unknown; onLimit: string }, policies: readonly Policy[], field: string): RouteCounting | undefined {
  if (raw.count === undefined && raw.cost === undefined) {
    if (raw.estimate !== undefined) throw new ValidationError(`${field}.estimate`, 'is for a route whose cost the answer reports: give "cost": { "responseJson": … } or { "responseHeader": … } too');
    return undefined;
  }
  const count = raw.count === undefined ? undefined : parseCount(raw.count, `${field}.count`);
  const cost: CostSource = raw.cost === undefined ? { from: "constant", cost: 1 } : parseCost(raw.cost, `${field}.cost`, policies);
  const afterAnswer = count !== undefined || cost.from === "responseHeader" || cost.from === "responseJson" || cost.from === "usage";
  const read = parseReadLimits(raw.cost, `${field}.cost`);
  if (afterAnswer) {
    const counted = raw.count !== undefined ? `${field}.count` : `${field}.cost`;
    // A reservation is a consumption: there is nothing to hold a request for when its cost comes later.
    if (raw.onLimit === "delay") throw new ValidationError(`${field}.onLimit`, `must be "reject" when answers are counted (${counted}): a request cannot wait for a slot whose cost is not known yet`);
    if (concurrencyPolicies(policies).length === policies.length) throw new ValidationError(counted, "counts nothing: the route's policies are all concurrency policies, which hold leases rather than count");
  }
  if (cost.from === "usage" && raw.estimate !== undefined) return { ...(count ? { count } : {}), cost, afterAnswer, read, ...parseUsageEstimate(raw.estimate, cost, `${field}.estimate`) };
  const estimate = raw.estimate === undefined ? undefined : parseEstimate(raw.estimate, cost, `${field}.estimate`);
  return { ...(count ? { count } : {}), cost, afterAnswer, read, ...(estimate ? { estimate } : {}) };
}

/**
 * A "usage" cost's estimate: any estimate form (estimate.ts), the tokens of the whole request,
 * or `{ "input": form, "output": form }`, each part its own (measures.ts reservationsOf).
 */
function parseUsageEstimate(input: unknown, cost: UsageCost, field: string): Pick<RouteCounting, "estimate" | "estimates"> {
  // parseEstimate asks only that the cost be one the answer reports, and its bounds.
  const reported = { from: "responseJson", bounds: cost.bounds };
  if (isObject(input) && ("input" in input || "output" in input)) {
    for (const name of Object.keys(input)) if (name !== "input" && name !== "output") throw new ValidationError(`${field}.${name}`, 'is not a known field (an estimate in parts is { "input": …, "output": … })');
    for (const name of ["input", "output"]) if (!(name in input)) throw new ValidationError(`${field}.${name}`, "is required: an estimate in parts gives both the input and the output tokens");
    return { estimates: { input: parseEstimate(input.input, reported, `${field}.input`), output: parseEstimate(input.output, reported, `${field}.output`) } };
  }
  return { estimate: parseEstimate(input, reported, field) };
}
