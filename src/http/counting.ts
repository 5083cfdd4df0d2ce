import { describeValue } from "../core/validation.js";

/**
 * The rules of counting what the origin (or the app) answers, shared by the gateway's config
 * (src/gateway/counting.ts) and rateLimit()'s `count`/`cost` options: which statuses count, and
 * what a reported cost becomes. docs/counting.md describes them.
 */

/** The largest cost of one request: the limiter's own bound on `cost`. */
export const MAX_COST = 1e9;

/** Which answers are counted: exact codes and whole classes ("4xx" is 4). */
export interface StatusMatch {
  codes: ReadonlySet<number>;
  classes: ReadonlySet<number>;
}

export const STATUS_LIST_FORM = 'codes from 100 to 599 or classes "1xx" to "5xx", like [401, 403, "5xx"]';

/** Parses a status list (`[401, 403, "5xx"]`); answers the matcher, or an error sentence naming the bad item's index. */
export function parseStatusList(input: unknown): StatusMatch | { index?: number; error: string } {
  if (!Array.isArray(input)) return { error: `must be an array of ${STATUS_LIST_FORM}, got ${describeValue(input)}` };
  if (input.length === 0) return { error: `must name at least one status: ${STATUS_LIST_FORM}` };
  const codes = new Set<number>();
  const classes = new Set<number>();
  for (let i = 0; i < input.length; i++) {
    const item: unknown = input[i];
    if (typeof item === "number" && Number.isInteger(item) && item >= 100 && item <= 599) codes.add(item);
    else if (typeof item === "string" && /^[1-5]xx$/.test(item)) classes.add(Number(item[0]));
    else return { index: i, error: `must be a status code from 100 to 599 or a class "1xx" to "5xx", got ${describeValue(item)}` };
  }
  return { codes, classes };
}

export function statusMatches(match: StatusMatch, status: number): boolean {
  return match.codes.has(status) || match.classes.has(Math.floor(status / 100));
}

/** How a reported cost is bounded: `max` clamps it; `missing` stands in for an absent or unusable value. */
export interface CostBounds {
  /** Undefined: no clamp below MAX_COST. */
  max?: number;
  missing: number;
}

/** The default `missing`: a request whose cost is unknown counts as one request. */
export const DEFAULT_MISSING_COST = 1;

/**
 * A reported value as a cost: a non-negative integer, clamped to `max` (and MAX_COST); anything
 * else (absent, negative, fractional, not a number) is `missing`. `usable` says which it was,
 * so callers can log a value that was there but unusable.
 */
export function boundedCost(value: unknown, bounds: CostBounds): { cost: number; usable: boolean } {
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) return { cost: bounds.missing, usable: false };
  return { cost: Math.min(value, bounds.max ?? MAX_COST, MAX_COST), usable: true };
}

/** A header's value as a cost: its decimal digits only ("12"), else unusable. */
export function headerCost(text: string | null | undefined, bounds: CostBounds): { cost: number; usable: boolean; present: boolean } {
  if (text === null || text === undefined) return { cost: bounds.missing, usable: false, present: false };
  const trimmed = text.trim();
  // Digits only: "1e3", "0x10" and "12 tokens" are not counts. Long runs are clamped, not parsed as floats.
  if (!/^\d+$/.test(trimmed)) return { cost: bounds.missing, usable: false, present: true };
  const value = trimmed.length > 10 ? MAX_COST : Number(trimmed);
  return { ...boundedCost(value, bounds), present: true };
}

/**
 * Logs a usage value that was there but unusable once per route (or middleware option) and
 * minute: an origin that reports garbage on every answer must not flood the log.
 */
export class UsageWarnings {
  readonly #lastMs = new Map<string, number>();
  readonly #log: (entry: Record<string, unknown>) => void;
  readonly #intervalMs: number;

  constructor(log: (entry: Record<string, unknown>) => void, intervalMs = 60_000) {
    this.#log = log;
    this.#intervalMs = intervalMs;
  }

  /** `source`: what is warned about (a route's field, a middleware's option), one line a minute each. */
  warn(source: string, entry: Record<string, unknown>, nowMs = Date.now()): void {
    const last = this.#lastMs.get(source);
    if (last !== undefined && nowMs - last < this.#intervalMs) return;
    this.#lastMs.set(source, nowMs);
    this.#log({ event: "usage-unusable", ...entry });
  }
}
