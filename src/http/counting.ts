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

/** The default `missing` of a cost the client states (`requestHeader`, a function of the request): one request. */
export const DEFAULT_MISSING_COST = 1;

/**
 * The default `missing` of a cost the origin reports (`responseHeader`, `responseJson`): `max`
 * when set, else the largest capacity among the route's policies (`capacityMs`: what a key may
 * spend in a whole window). A client can make usage absent (leave out `include_usage`) or try
 * to make it unreadable, so what it then pays must be at least what it could have used: nothing
 * less than `max` is, and without `max` nothing less than its whole window. More would be a
 * debt of years on a gcra key (1e9 at 100 a minute) for one answer an origin sent without usage.
 */
export const reportedMissingDefault = (max: number | undefined, capacity: number): number => max ?? Math.min(capacity, MAX_COST);

/**
 * A reported cost, by one rule for every source (a JSON value, a header's text, a function's
 * answer; docs/counting.md, "What a reported value costs"):
 * - a whole number from 0 up is the cost, clamped to `max` and MAX_COST; that includes numbers
 *   past every bound, however written (`1e308`, `9007199254740993`, `1e400` and `Infinity`,
 *   which JavaScript reads as Infinity): a huge report is a huge cost, never a small one;
 * - anything else (absent, negative, fractional, NaN, not a number) is unusable: `missing`.
 * `usable` says which it was, so callers can log a value that was there but unusable.
 */
export function reportedCost(value: unknown, bounds: CostBounds): { cost: number; usable: boolean } {
  const whole = typeof value === "number" && value >= 0 && (Number.isInteger(value) || value === Infinity);
  if (!whole) return { cost: bounds.missing, usable: false };
  return { cost: Math.min(value, bounds.max ?? MAX_COST, MAX_COST), usable: true };
}

/**
 * A decimal number as a header or a JSON body writes it (`12`, `1.5`, `-3`, `1e308`), leading
 * zeros allowed, or `Infinity`: what a header's text must look like to be read as a number.
 */
const NUMBER_TEXT = /^(?:-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|[+-]?Infinity)$/;

/** A header's value as a cost: its text read as a number ("12", "1e3"), then the one rule of reportedCost. */
export function headerCost(text: string | null | undefined, bounds: CostBounds): { cost: number; usable: boolean; present: boolean } {
  if (text === null || text === undefined) return { cost: bounds.missing, usable: false, present: false };
  const trimmed = text.trim();
  // "0x10", "12 tokens" and "" are not numbers (Number() would read the first and the last).
  if (!NUMBER_TEXT.test(trimmed)) return { cost: bounds.missing, usable: false, present: true };
  return { ...reportedCost(Number(trimmed), bounds), present: true };
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
