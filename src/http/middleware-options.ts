import { HEADER_STYLES, type HeaderStyle } from "../core/header-styles.js";
import { MAX_DURATION_MS } from "../core/duration.js";
import { describeValue, nearestName } from "../core/validation.js";

/**
 * The option names of `rateLimit()` (Hono, Express, node:http), checked in JavaScript as the
 * types check them in TypeScript: an unknown one throws, naming it, instead of being ignored
 * (an express-rate-limit user's `windowMs` would otherwise change nothing, silently).
 */
const KNOWN = ["store", "policies", "key", "onLimit", "maxDelayMs", "dryRun", "legacyHeaders", "headers", "log", "overrides", "count", "cost", "estimate", "skip", "handler"] as const;
const KNOWN_SET: ReadonlySet<string> = new Set(KNOWN);

/**
 * What express-rate-limit, hono-rate-limiter and rate-limiter-flexible users bring, and
 * Spillway's way to say it (docs/library.md, "Coming from express-rate-limit"). The policy ones
 * are written with the user's own numbers (`windowMs: 60000` → `period: "1m"`).
 */
const MIGRATIONS: Readonly<Record<string, string | ((options: Record<string, unknown>) => string)>> = {
  windowMs: (options) => `a policy's period: ${policyOf(options)}${asPeriod("windowMs", options.windowMs, 1)}`,
  max: (options) => `a policy's limit: ${policyOf(options)}`,
  limit: (options) => `a policy's limit: ${policyOf(options)}`,
  points: (options) => `a policy's limit: ${policyOf(options)}`,
  duration: (options) => `a policy's period: ${policyOf(options)}${asPeriod("duration", options.duration, 1000)}`,
  keyGenerator: "key: (request) => string",
  message: "handler, which answers a denial your way",
  statusCode: "handler, which answers a denial your way",
  standardHeaders: 'headers: "draft-10" | "draft-7" | "draft-6" | "legacy"',
  skipSuccessfulRequests: 'count: ["4xx", "5xx"] (only failed answers count)',
  skipFailedRequests: 'count: ["1xx", "2xx", "3xx"] (only successful answers count)',
  requestWasSuccessful: "count: (response) => boolean",
  passOnStoreError: 'a policy\'s failMode: "open"',
  identifier: "a policy's name",
  requestPropertyName: "req.rateLimit (Express, node:http) or c.get(\"rateLimit\") (Hono), always that name",
  blockDuration: 'a policy\'s block: "1h"',
  onLimitReached: "handler",
};

/** A period in ms as a policy writes it: 900000 → "15m", 1500 → "1500ms". */
export function durationText(ms: number): string {
  for (const [unit, size] of [["d", 86_400_000], ["h", 3_600_000], ["m", 60_000], ["s", 1000]] as const) if (ms % size === 0) return `${ms / size}${unit}`;
  return `${ms}ms`;
}

/** A whole number of ms from a user's value in `unitMs` units (rate-limiter-flexible's `duration` is seconds), or undefined. */
function periodMsOf(value: unknown, unitMs: number): number | undefined {
  const ms = typeof value === "number" ? value * unitMs : NaN;
  return Number.isSafeInteger(ms) && ms >= 1 && ms <= MAX_DURATION_MS ? ms : undefined;
}

/** The policy that says what the user's express-rate-limit (or rate-limiter-flexible) options said. */
function policyOf(options: Record<string, unknown>): string {
  const periodMs = periodMsOf(options.windowMs, 1) ?? periodMsOf(options.duration, 1000) ?? 60_000;
  const given = [options.max, options.limit, options.points].find((value) => Number.isSafeInteger(value) && (value as number) >= 1);
  const period = durationText(periodMs);
  return `policies: { name: "per-${period}", limit: ${(given as number | undefined) ?? 100}, period: "${period}" }`;
}

/** ` (windowMs: 900000 is period: "15m", or period: 900000)`, or nothing for a value that is no period. */
function asPeriod(name: string, value: unknown, unitMs: number): string {
  const ms = periodMsOf(value, unitMs);
  return ms === undefined ? "" : ` (${name}: ${String(value)} is period: "${durationText(ms)}", or period: ${ms})`;
}

/** Throws a TypeError for an option `rateLimit()` does not know, with Spillway's name for it. */
export function checkOptionNames(options: object): void {
  for (const name of Object.keys(options)) {
    if (KNOWN_SET.has(name)) continue;
    const migration = Object.hasOwn(MIGRATIONS, name) ? MIGRATIONS[name] : undefined;
    if (migration) throw new TypeError(`rateLimit: unknown option ${JSON.stringify(name)}: Spillway's equivalent is ${typeof migration === "function" ? migration(options as Record<string, unknown>) : migration}`);
    const near = nearestName(name, KNOWN);
    const hint = near ? ` (did you mean ${JSON.stringify(near)}?)` : ` (the options are ${KNOWN.join(", ")})`;
    throw new TypeError(`rateLimit: unknown option ${JSON.stringify(name)}${hint}`);
  }
}

/** The `headers` option: a style name (default "draft-10"). */
export function headerStyleOption(value: unknown): HeaderStyle {
  if (value === undefined) return "draft-10";
  if (HEADER_STYLES.includes(value as HeaderStyle)) return value as HeaderStyle;
  throw new TypeError(`rateLimit: headers must be one of ${HEADER_STYLES.map((style) => JSON.stringify(style)).join(", ")}, got ${describeValue(value)}`);
}

/** A function option (`skip`, `handler`), or undefined. */
export function functionOption<F>(name: string, value: unknown, shape: string): F | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== "function") throw new TypeError(`rateLimit: ${name} must be a function ${shape}, got ${describeValue(value)}`);
  return value as F;
}

/** What a `handler` is told about a denial: Spillway's answer, which it may send or replace. */
export interface Denial {
  /** 429. */
  status: number;
  /** The rate-limit fields and Retry-After (in the `headers` style), already set on the answer. */
  headers: Record<string, string>;
  /** The problem body Spillway would send (`type`, `title`, `status`, `detail`, `violated-policies`). */
  problem: Record<string, unknown>;
}

/** The denial in a 429 the engine built: its fields (not its content type) and its problem body. */
export async function denialOf(response: Response): Promise<Denial> {
  const headers: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (name !== "content-type") headers[name] = value;
  });
  return { status: response.status, headers, problem: (await response.json()) as Record<string, unknown> };
}
