import * as z from "zod/mini";
import { CALENDAR_NOMINAL_MS, CALENDAR_UNITS, type CalendarSpec, isUtcOffset, knownTimezone } from "./calendar.js";
import { MAX_BALANCE } from "./credits.js";
import { parseDurationMs } from "./duration.js";
import { ALGORITHMS, type Policy } from "./types.js";
import { ValidationError, describeValue, integerIn, parseWith } from "./validation.js";

export const POLICY_NAME_PATTERN = /^[a-z0-9][a-z0-9._-]{0,63}$/;
/** sliding-log's cap (the contract's): its state is bounded by its bucket grid, but an exact log of more is sliding-window's job. */
export const MAX_SLIDING_LOG_LIMIT = 100_000;
/** The most a rate policy (gcra, token-bucket, sliding-window) or concurrency counts. */
export const MAX_LIMIT = 1e9;
/**
 * The most a fixed-window or credits policy counts (and a credits refill's `to`): a money
 * budget in microdollars ($50,000 a month is 5e13). Those two only add, subtract and compare
 * whole numbers, so every store (doubles in Redis's Lua included) is exact below 2^53; 1e15 is
 * MAX_BALANCE, the most a balance holds. gcra and token-bucket divide periods into ms per unit
 * and sliding-window weighs counts by fractions: past 1e9 those are not shown exact, so they
 * keep MAX_LIMIT.
 */
export const MAX_BUDGET_LIMIT = MAX_BALANCE;
/** Algorithms whose `limit` may go up to MAX_BUDGET_LIMIT. */
export const BUDGET_ALGORITHMS: ReadonlySet<string> = new Set(["fixed-window", "credits"]);

/** The most `limit` may be for an algorithm (sliding-log, fixed-window and credits differ from MAX_LIMIT). */
export function maxLimitOf(algorithm: string): number {
  if (algorithm === "sliding-log") return MAX_SLIDING_LOG_LIMIT;
  return BUDGET_ALGORITHMS.has(algorithm) ? MAX_BUDGET_LIMIT : MAX_LIMIT;
}

/** What `limit` takes, for a message: the bound of each algorithm. */
export const LIMIT_RULE = `must be a positive integer from 1 to ${MAX_LIMIT} (fixed-window and credits: to ${MAX_BUDGET_LIMIT}; sliding-log: to ${MAX_SLIDING_LOG_LIMIT})`;

/**
 * The refusal of a `limit` above its algorithm's bound (maxLimitOf), or undefined when it fits.
 * The schema admits up to MAX_BUDGET_LIMIT for every algorithm; this says which bound applies.
 */
export function limitAboveBound(algorithm: string, limit: number): string | undefined {
  if (limit <= maxLimitOf(algorithm)) return undefined;
  if (algorithm === "sliding-log") return `must be at most ${MAX_SLIDING_LOG_LIMIT} for sliding-log (use sliding-window for larger limits), got ${limit}`;
  return `must be at most ${MAX_LIMIT} for ${algorithm} (only fixed-window and credits, whose counts are whole numbers, take up to ${MAX_BUDGET_LIMIT}: a money budget), got ${limit}`;
}
export const DEFAULT_LEASE_MS = 30_000;
/** A penalty box lasts 1 s … 1 d (SPEC §1). */
export const MIN_BLOCK_MS = 1000;
export const MAX_BLOCK_MS = 86_400_000;

/**
 * A duration as written (`"10s"` or ms), resolved to ms.
 * @internal (zod's types stay out of the published declarations: src/core/validation.ts, Same)
 */
export const durationSchema = z.pipe(
  z.union([z.string(), z.number()], { error: 'must be a duration like "10s" or a number of ms' }),
  z.transform((value: string | number, ctx) => {
    const parsed = parseDurationMs(value);
    if (parsed.ok) return parsed.ms;
    ctx.issues.push({ code: "custom", message: parsed.error, input: value });
    return z.NEVER;
  }),
);

/** The most of a policy's capacity that outstanding local batches may hold (README: "Hot keys"). */
export const MAX_LOCAL_SHARE = 0.5;
const shareRule = `must be a number from 0 to ${MAX_LOCAL_SHARE}`;
const localSchema = z.strictObject(
  { share: z.number({ error: shareRule }).check(z.minimum(0, { error: shareRule }), z.maximum(MAX_LOCAL_SHARE, { error: shareRule })) },
  { error: "must be an object like { \"share\": 0.1 }" },
);

/**
 * Algorithms whose state changes only by admissions until a moment the store reports (the
 * window's end, the next refill): a batch spent before then is exact. gcra and sliding-log
 * refill continuously, so a batch spent after its debit could crowd a later span.
 */
export const LEASABLE_ALGORITHMS: ReadonlySet<string> = new Set(["fixed-window", "sliding-window", "token-bucket"]);

const warnAtRule = "must be a number between 0 and 1 (exclusive), the share of limit used at which decisions carry a warning";

const calendarSchema = z.enum(CALENDAR_UNITS, { error: `must be one of ${CALENDAR_UNITS.join(", ")}` });
const timezoneSchema = z.string({ error: 'must be an IANA time zone name such as "Europe/Paris"' });
const refillSchema = z.strictObject(
  { calendar: calendarSchema, timezone: z.optional(timezoneSchema), to: z.optional(integerIn(0, MAX_BUDGET_LIMIT, "an integer")) },
  { error: 'must be an object like { "calendar": "month" }' },
);

/**
 * The shape of one policy object (spillway.schema.json is generated from it).
 * @internal
 */
export const policySchema = z.strictObject(
  {
    name: z.string({ error: "must be a string" }).check(z.regex(POLICY_NAME_PATTERN, { error: "must match [a-z0-9][a-z0-9._-]{0,63}" })),
    algorithm: z._default(z.enum(ALGORITHMS, { error: `must be one of ${ALGORITHMS.join(", ")}` }), "gcra"),
    limit: z.int({ error: LIMIT_RULE }).check(z.minimum(1, { error: LIMIT_RULE }), z.maximum(MAX_BUDGET_LIMIT, { error: LIMIT_RULE })),
    period: z.optional(durationSchema),
    burst: z.optional(integerIn(1, MAX_LIMIT, "a positive integer")),
    lease: z.optional(durationSchema),
    failMode: z._default(z.enum(["open", "closed"], { error: 'must be "open" or "closed"' }), "closed"),
    local: z.optional(localSchema),
    block: z.optional(durationSchema),
    calendar: z.optional(calendarSchema),
    timezone: z.optional(timezoneSchema),
    refill: z.optional(refillSchema),
    warnAt: z.optional(z.number({ error: warnAtRule }).check(z.gt(0, { error: warnAtRule }), z.lt(1, { error: warnAtRule }))),
  },
  { error: "must be a policy object" },
);

/**
 * Validates one policy object (README "Algorithms") and resolves its durations and defaults.
 * Throws a ValidationError that names the field: `policy.limit: must be a positive integer from 1 to 1000000000 (…), got -1`.
 *
 * @example parsePolicy({ name: "per-minute", limit: 600, period: "1m" }, "policy")
 */
export function parsePolicy(input: unknown, field: string): Policy {
  const raw = parseWith(policySchema, input, field);
  const at = (sub: string) => `${field}.${sub}`;
  // Errors quote durations as the user wrote them ("1s"), not as resolved (1000).
  const written = input as { period?: unknown; lease?: unknown; block?: unknown };
  const isConcurrency = raw.algorithm === "concurrency";
  const isCredits = raw.algorithm === "credits";
  const calendar = calendarOf(raw, written, at);
  if (isCredits && raw.period !== undefined) {
    throw new ValidationError(at("period"), `is not used by credits (a balance has no period; a refill takes refill.calendar), got ${describeValue(written.period)}`);
  }
  if (!isConcurrency && !isCredits && raw.period === undefined && !calendar) {
    throw new ValidationError(at("period"), `is required for ${raw.algorithm}, got nothing`);
  }
  if (isConcurrency && raw.period !== undefined) {
    throw new ValidationError(at("period"), `is not used by concurrency (use lease), got ${describeValue(written.period)}`);
  }
  const usesBurst = raw.algorithm === "gcra" || raw.algorithm === "token-bucket";
  if (!usesBurst && raw.burst !== undefined) {
    throw new ValidationError(at("burst"), `is only used by gcra and token-bucket, got ${raw.burst}`);
  }
  if (!isConcurrency && raw.lease !== undefined) {
    throw new ValidationError(at("lease"), `is only used by concurrency, got ${describeValue(written.lease)}`);
  }
  const aboveBound = limitAboveBound(raw.algorithm, raw.limit);
  if (aboveBound) throw new ValidationError(at("limit"), aboveBound);
  if (raw.local && isCredits) {
    throw new ValidationError(at("local"), "is not for credits: a balance is raised by /v1/credits, which a local cache would not see");
  }
  if (raw.local && isConcurrency) {
    throw new ValidationError(at("local"), "is not for concurrency: a lease is held, not spent, so it cannot be cached locally (use local on a rate policy)");
  }
  if (raw.local && raw.local.share > 0 && !LEASABLE_ALGORITHMS.has(raw.algorithm)) {
    throw new ValidationError(at("local.share"), `must be 0 (the deny cache alone) for ${raw.algorithm}: it refills continuously, so a token batch spent after its debit could crowd a later span; token batches need fixed-window, sliding-window or token-bucket, got ${raw.local.share}`);
  }
  if (raw.block !== undefined && isConcurrency) {
    throw new ValidationError(at("block"), `is not for concurrency (a lease is held, not spent: there is no rate to exceed), got ${describeValue(written.block)}`);
  }
  if (raw.block !== undefined && (raw.block < MIN_BLOCK_MS || raw.block > MAX_BLOCK_MS)) {
    throw new ValidationError(at("block"), `must be between 1s and 1d, got ${describeValue(written.block)}`);
  }
  return {
    name: raw.name,
    algorithm: raw.algorithm,
    limit: raw.limit,
    periodMs: calendar && !isCredits ? CALENDAR_NOMINAL_MS[calendar.unit] : (raw.period ?? (calendar ? CALENDAR_NOMINAL_MS[calendar.unit] : 1000)),
    burst: usesBurst ? (raw.burst ?? raw.limit) : raw.limit,
    leaseMs: raw.lease ?? DEFAULT_LEASE_MS,
    failMode: raw.failMode,
    ...(raw.local ? { local: { share: raw.local.share } } : {}),
    ...(raw.block !== undefined ? { blockMs: raw.block } : {}),
    ...(calendar ? { calendar } : {}),
    ...(raw.warnAt !== undefined ? { warnAt: raw.warnAt } : {}),
    // Without `to` the refill goes back to `limit`, whatever an override makes of it for a key.
    ...(isCredits && raw.refill?.to !== undefined ? { refillTo: raw.refill.to } : {}),
  };
}

type RawPolicy = { algorithm: string; period?: number; calendar?: CalendarSpec["unit"]; timezone?: string; refill?: { calendar: CalendarSpec["unit"]; timezone?: string } };

/**
 * The calendar of a policy (SPEC §1): `calendar` + `timezone` on a fixed-window policy, instead
 * of `period`; `refill: { calendar, timezone? }` on a credits policy. Refuses each field where
 * it means nothing, and a zone Intl does not know.
 */
function calendarOf(raw: RawPolicy, written: { period?: unknown }, at: (sub: string) => string): CalendarSpec | undefined {
  if (raw.refill !== undefined && raw.algorithm !== "credits") {
    throw new ValidationError(at("refill"), `is only for credits (a fixed-window policy takes calendar), got ${describeValue(raw.refill)}`);
  }
  if (raw.calendar !== undefined && raw.algorithm !== "fixed-window") {
    const hint = raw.algorithm === "credits" ? "credits takes refill: { calendar }" : "calendar windows are fixed windows";
    throw new ValidationError(at("calendar"), `is only for fixed-window (${hint}), got ${describeValue(raw.calendar)} on ${raw.algorithm}`);
  }
  if (raw.calendar !== undefined && raw.period !== undefined) {
    throw new ValidationError(at("calendar"), `replaces period: give one of them, got calendar ${describeValue(raw.calendar)} and period ${describeValue(written.period)}`);
  }
  if (raw.timezone !== undefined && raw.calendar === undefined) {
    throw new ValidationError(at("timezone"), `is only used with calendar, got ${describeValue(raw.timezone)}`);
  }
  const unit = raw.calendar ?? raw.refill?.calendar;
  if (unit === undefined) return undefined;
  const field = raw.calendar !== undefined ? at("timezone") : at("refill.timezone");
  const written_ = raw.calendar !== undefined ? raw.timezone : raw.refill?.timezone;
  const timezone = knownTimezone(written_ ?? "UTC");
  if (timezone === undefined && typeof written_ === "string" && isUtcOffset(written_)) {
    throw new ValidationError(field, `must be an IANA time zone name such as "Europe/Paris" or "UTC", not a UTC offset: got ${describeValue(written_)} (name the place, or use "Etc/GMT-5" for UTC+5: the Etc/ signs are inverted)`);
  }
  if (timezone === undefined) throw new ValidationError(field, `must be an IANA time zone name such as "Europe/Paris" or "UTC", got ${describeValue(written_)}`);
  return { unit, timezone };
}

/**
 * Validates a list of policies and refuses duplicate names. Error paths use the policy's
 * name when it has a valid one (`policies.per-minute.limit`), else its index.
 */
export function parsePolicyList(input: unknown, field: string): Policy[] {
  if (!Array.isArray(input)) throw new ValidationError(field, `must be an array of policies, got ${describeValue(input)}`);
  const seen = new Set<string>();
  return input.map((item, index) => {
    const name = (item as { name?: unknown } | null)?.name;
    const label = typeof name === "string" && POLICY_NAME_PATTERN.test(name) ? name : String(index);
    const policy = parsePolicy(item, `${field}.${label}`);
    if (seen.has(policy.name)) throw new ValidationError(`${field}.${label}.name`, `must be unique, "${policy.name}" appears twice`);
    seen.add(policy.name);
    return policy;
  });
}

/** Policies a config names, looked up by name. */
export type PolicyCatalog = ReadonlyMap<string, Policy>;

/** The names a config has, for a message about a name it lacks (at most 20 of them). */
function knownNames(known: Iterable<string>): string {
  const names = [...known];
  if (names.length === 0) return "the config has no policies";
  const listed = names.slice(0, 20).map((name) => `"${name}"`).join(", ");
  return `it has ${listed}${names.length > 20 ? ` and ${names.length - 20} more` : ""}`;
}

export class UnknownPolicyError extends Error {
  readonly field: string;
  constructor(field: string, name: string, known: Iterable<string> = []) {
    super(`${field}: no policy named "${name}" in the config (${knownNames(known)})`);
    this.name = "UnknownPolicyError";
    this.field = field;
  }
}

/** What a `policy` field (or a route's `policies`) takes, for "is required (…)". */
export const POLICY_TAKES = "a policy name, an inline policy or an array of them";

/**
 * Resolves the `policy` field of a request: a name from the catalog, an inline policy,
 * or an array of them (a stack). Stacks must not name one policy twice.
 */
export function resolvePolicies(input: unknown, catalog: PolicyCatalog, field = "policy"): Policy[] {
  if (input === undefined) throw new ValidationError(field, `is required (${POLICY_TAKES})`);
  const items = Array.isArray(input) ? input : [input];
  if (items.length === 0) throw new ValidationError(field, "must name at least one policy, got []");
  if (items.length > 16) throw new ValidationError(field, `may stack at most 16 policies, got ${items.length}`);
  const seen = new Set<string>();
  return items.map((item, index) => {
    const at = Array.isArray(input) ? `${field}.${index}` : field;
    let policy: Policy;
    if (typeof item === "string") {
      const found = catalog.get(item);
      if (!found) throw new UnknownPolicyError(at, item, catalog.keys());
      policy = found;
    } else if (item !== null && typeof item === "object" && !Array.isArray(item)) {
      policy = parsePolicy(item, at);
    } else {
      throw new ValidationError(at, `must be a policy name or a policy object, got ${describeValue(item)}`);
    }
    if (seen.has(policy.name)) throw new ValidationError(at, `stacks "${policy.name}" twice`);
    seen.add(policy.name);
    const configured = typeof item === "string" ? undefined : catalog.get(policy.name);
    if (configured) assertSameShape(policy, configured, at);
    return policy;
  });
}

/**
 * Refuses an inline policy that takes a configured policy's name with another shape. A key's
 * state belongs to the pair (key, policy name) on every store, so such a policy would read the
 * configured policy's state in another meaning: a credits balance spent to 0 read as a fixed
 * window's (none) and written back fresh (a refill for the price of one check), a balance of
 * 5000 judged fresh against an inline `limit` of 5000 and dropped (the configured 100 again), a
 * GCRA's timestamp read on another interval. Fields that shape no state (failMode, warnAt,
 * local, block, lease) may differ. The field named is the first that differs, as written.
 */
function assertSameShape(inline: Policy, configured: Policy, at: string): void {
  const differs = (field: string, written: unknown, expected: unknown): never => {
    throw new ValidationError(
      `${at}.${field}`,
      `must be ${describeValue(expected)}, as the configured policy "${configured.name}" has it: a key's state belongs to the policy's name, so an inline policy of that name must keep its shape (give its name alone, or another name), got ${describeValue(written)}`,
    );
  };
  if (inline.algorithm !== configured.algorithm) differs("algorithm", inline.algorithm, configured.algorithm);
  if (inline.limit !== configured.limit) differs("limit", inline.limit, configured.limit);
  if (inline.burst !== configured.burst) differs("burst", inline.burst, configured.burst);
  const calendarField = inline.algorithm === "credits" ? "refill" : "calendar";
  if (inline.calendar?.unit !== configured.calendar?.unit) differs(calendarField === "refill" ? "refill.calendar" : "calendar", inline.calendar?.unit, configured.calendar?.unit);
  if (inline.calendar?.timezone !== configured.calendar?.timezone) differs(calendarField === "refill" ? "refill.timezone" : "timezone", inline.calendar?.timezone, configured.calendar?.timezone);
  if (inline.periodMs !== configured.periodMs) differs("period", inline.periodMs, configured.periodMs);
  if (inline.refillTo !== configured.refillTo) differs("refill.to", inline.refillTo, configured.refillTo);
}
