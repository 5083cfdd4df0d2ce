import * as z from "zod/mini";
import { LIMIT_RULE, MAX_BUDGET_LIMIT, MAX_LIMIT, durationSchema, limitAboveBound, type PolicyCatalog, UnknownPolicyError } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue, integerIn, parseWith } from "../core/validation.js";
import { MAX_KEY_BYTES, keyFitsBytes } from "../core/wire.js";
import { MAX_KEY_PARTS } from "../config/schema.js";
import { parseKeySource, sourceName } from "./key-source.js";
import { splitKeyParts } from "./key-parts.js";

/**
 * One override (docs/overrides.md): a (policy, key) with its own `limit`, `burst` or `period`.
 * `key` is the rate-limit key as the user knows it (a route's key value, a composite key's
 * joined form, the `key` of /v1/check); a trailing `*` makes it a prefix wildcard.
 */
export interface Override {
  policy: string;
  key: string;
  /**
   * The name of the key source it is for (key-source.ts sourceName: `ip`,
   * `header:x-api-key`, `[header:x-api-key|ip]`): only a gateway route reading keys from that
   * source sees it. Undefined: for keys given to /v1/check, RPC and rateLimit().
   */
  source?: string;
  limit?: number;
  burst?: number;
  periodMs?: number;
  /** Epoch ms after which the override no longer applies. */
  expiresAtMs?: number;
}

/** More overrides than this for one policy are refused: every process holds them all. */
export const MAX_OVERRIDES_PER_POLICY = 100_000;

const encoder = new TextEncoder();
const overrideKey = z.string({ error: "must be a string of 1 to 512 UTF-8 bytes" }).check(
  z.superRefine((value: string, ctx) => {
    if (value.length > 0 && keyFitsBytes(value)) return;
    const bytes = encoder.encode(value).length;
    if (bytes < 1 || bytes > MAX_KEY_BYTES) ctx.addIssue({ code: "custom", message: `must be 1 to ${MAX_KEY_BYTES} UTF-8 bytes, got ${bytes} bytes` });
  }),
);
const expiresAtSchema = z.union([z.int(), z.string()], { error: 'must be a time: epoch milliseconds or an ISO 8601 date like "2026-12-31T00:00:00Z"' });
/**
 * A key source as an override (or an allow/deny entry) names it: a route's key spec, or an array for a composite key.
 * @internal (zod's types stay out of the published declarations: src/core/validation.ts, Same)
 */
export const sourceSchema = z.union([z.string(), z.array(z.string()).check(z.minLength(1), z.maxLength(MAX_KEY_PARTS))], {
  error: `must be a route's key source like "ip" or "header:x-api-key", or an array of 1 to ${MAX_KEY_PARTS} of them for a composite key`,
});
/**
 * An override as written in config or a PUT body.
 * @internal
 */
export const overrideSchema = z.strictObject(
  {
    policy: z.string({ error: "must be a policy name from the config" }),
    key: overrideKey,
    source: z.optional(sourceSchema),
    // Up to the largest bound of any algorithm; parseOverride holds it to its policy's (limitAboveBound).
    limit: z.optional(z.int({ error: LIMIT_RULE }).check(z.minimum(1, { error: LIMIT_RULE }), z.maximum(MAX_BUDGET_LIMIT, { error: LIMIT_RULE }))),
    burst: z.optional(integerIn(1, MAX_LIMIT, "a positive integer")),
    period: z.optional(durationSchema),
    expiresAt: z.optional(expiresAtSchema),
  },
  { error: 'must be an object like { "policy": "per-key", "key": "acme-*", "limit": 6000 }' },
);

/** The furthest ahead an `expiresAt` may be (docs/overrides.md): later is a mistake, or means "never" (leave it out). */
export const MAX_EXPIRES_AHEAD_MS = 100 * 366 * 86_400_000;

/** `2026-12-31`, `2026-12-31T23:59`, `…:59`, `…:59.123`, each time optionally with `Z` or `±hh:mm`. */
export const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?([Zz]|[+-]\d{2}:?\d{2})?)?$/;

/** Whether the date's fields name a real instant: no 31st of February, no hour 25 (Date.parse rolls those over). */
function realDate(match: RegExpExecArray): boolean {
  const [, year, month, day, hour = "0", minute = "0", second = "0"] = match;
  const daysInMonth = new Date(Date.UTC(Number(year), Number(month), 0)).getUTCDate();
  return Number(month) >= 1 && Number(month) <= 12 && Number(day) >= 1 && Number(day) <= daysInMonth && Number(hour) <= 23 && Number(minute) <= 59 && Number(second) <= 59;
}

/**
 * `expiresAt` as epoch ms. A runtime override (PUT) must expire in the future; a config file's
 * may have expired (`pastAllowed`): it then applies to nothing, and the file stays valid, so a
 * date going by never stops a restart or a reload.
 */
function parseExpiresAt(value: string | number, field: string, nowMs: number, pastAllowed: boolean): number {
  const iso = typeof value === "string" ? ISO_DATE.exec(value) : null;
  const ms = typeof value === "number" ? value : iso ? Date.parse(value) : Number.NaN;
  if (iso && !realDate(iso)) throw new ValidationError(field, `must be a real date and time, got ${describeValue(value)}`);
  if (!Number.isFinite(ms)) throw new ValidationError(field, `must be epoch milliseconds or an ISO 8601 date like "2026-12-31T00:00:00Z", got ${describeValue(value)}`);
  if (ms <= nowMs && !pastAllowed) throw new ValidationError(field, `must be in the future, got ${describeValue(value)}`);
  if (ms > nowMs + MAX_EXPIRES_AHEAD_MS) throw new ValidationError(field, `must be at most 100 years ahead (leave expiresAt out for an override that never expires), got ${describeValue(value)}`);
  return ms;
}

/** The name of an override's `source` (a route's key spec, or an array for a composite key). */
function parseSource(value: string | string[], field: string): string {
  const parsed = parseKeySource(value);
  if (typeof parsed === "string") throw new ValidationError(field, parsed);
  return sourceName(parsed);
}

/**
 * Validates one override against the policy it names: the policy must be in the config, and the
 * override may change only what that policy's algorithm uses (never the algorithm). Errors name
 * the field: `overrides.0.burst: is only used by gcra and token-bucket, got 5`.
 */
export function parseOverride(input: unknown, catalog: PolicyCatalog, field: string, nowMs = Date.now(), options: { pastAllowed?: boolean } = {}): Override {
  const raw = parseWith(overrideSchema, input, field);
  const at = (sub: string) => (field ? `${field}.${sub}` : sub);
  const base = catalog.get(raw.policy);
  if (!base) throw new UnknownPolicyError(at("policy"), raw.policy, catalog.keys());
  if (raw.limit === undefined && raw.burst === undefined && raw.period === undefined) {
    throw new ValidationError(field || "body", "must set at least one of limit, burst and period");
  }
  const usesBurst = base.algorithm === "gcra" || base.algorithm === "token-bucket";
  if (raw.burst !== undefined && !usesBurst) throw new ValidationError(at("burst"), `is only used by gcra and token-bucket; "${base.name}" is ${base.algorithm}, got ${raw.burst}`);
  if (raw.period !== undefined && (base.calendar || base.algorithm === "credits")) {
    throw new ValidationError(at("period"), `is not used by "${base.name}" (${base.calendar ? "its windows are calendar windows" : "a balance has no period"}), got ${describeValue((input as { period?: unknown }).period)}`);
  }
  if (raw.period !== undefined && base.algorithm === "concurrency") throw new ValidationError(at("period"), `is not used by concurrency ("${base.name}"), got ${describeValue((input as { period?: unknown }).period)}`);
  const aboveBound = raw.limit === undefined ? undefined : limitAboveBound(base.algorithm, raw.limit);
  if (aboveBound) throw new ValidationError(at("limit"), aboveBound.replace(` for ${base.algorithm}`, ` for ${base.algorithm} ("${base.name}")`));
  const override: Override = { policy: raw.policy, key: raw.key };
  if (raw.source !== undefined) override.source = parseSource(raw.source, at("source"));
  if (raw.limit !== undefined) override.limit = raw.limit;
  if (raw.burst !== undefined) override.burst = raw.burst;
  if (raw.period !== undefined) override.periodMs = raw.period;
  if (raw.expiresAt !== undefined) override.expiresAtMs = parseExpiresAt(raw.expiresAt, at("expiresAt"), nowMs, options.pastAllowed === true);
  return override;
}

/** The config's `overrides`, each validated; the same (policy, key) twice is an error. */
export function parseOverrideList(input: readonly unknown[], catalog: PolicyCatalog): Override[] {
  const seen = new Set<string>();
  const counts = new Map<string, number>();
  return input.map((item, index) => {
    const field = `overrides.${index}`;
    let override: Override;
    try {
      override = parseOverride(item, catalog, field, Date.now(), { pastAllowed: true });
    } catch (error) {
      // A config naming a policy it lacks is a config error like any other.
      if (error instanceof UnknownPolicyError) throw new ValidationError(error.field, error.message.slice(error.field.length + 2));
      throw error;
    }
    const id = overrideId(override);
    if (seen.has(id)) throw new ValidationError(`${field}.key`, `overrides "${override.key}" of "${override.policy}"${override.source === undefined ? "" : ` from ${JSON.stringify(sourceView(override.source))}`} twice`);
    seen.add(id);
    const count = (counts.get(override.policy) ?? 0) + 1;
    if (count > MAX_OVERRIDES_PER_POLICY) throw new ValidationError(field, `more than ${MAX_OVERRIDES_PER_POLICY} overrides of "${override.policy}"`);
    counts.set(override.policy, count);
    return override;
  });
}

/**
 * The policy an override makes of `base`: same name (state belongs to (key, name), so the
 * key keeps its counters) and algorithm, the override's limit, burst and period. A burst the
 * override does not set follows its limit, as a policy's does; algorithms without a burst
 * keep burst = limit.
 */
export function applyOverride(base: Policy, override: Override): Policy {
  const limit = override.limit ?? base.limit;
  const usesBurst = base.algorithm === "gcra" || base.algorithm === "token-bucket";
  const burst = usesBurst ? (override.burst ?? (override.limit !== undefined ? limit : base.burst)) : limit;
  return { ...base, limit, burst, periodMs: override.periodMs ?? base.periodMs };
}

/**
 * Where a table keeps an override: its key alone when it has no source (as overrides were
 * stored before sources existed, so those rows keep their meaning), else NUL and the JSON of
 * [source, key]. A bare key never starts with NUL here (such a key takes the second form too),
 * so no two (source, key) share a field.
 */
export function overrideField(override: Pick<Override, "key" | "source">): string {
  if (override.source === undefined && !override.key.startsWith("\u0000")) return override.key;
  return `\u0000${JSON.stringify([override.source ?? null, override.key])}`;
}

/** The (source, key) of a field overrideField wrote. */
export function fieldKey(field: string): { source: string | undefined; key: string } {
  if (field.startsWith("\u0000")) {
    try {
      const [source, key] = JSON.parse(field.slice(1)) as [unknown, unknown];
      if ((source === null || typeof source === "string") && typeof key === "string") return { source: source ?? undefined, key };
    } catch {
      // A bare key that starts with NUL, stored by an earlier release: what it says.
    }
  }
  return { source: undefined, key: field };
}

/** One override's identity among all: (policy, source, key). */
export function overrideId(override: Pick<Override, "policy" | "key" | "source">): string {
  return `${override.policy}\u0000${overrideField(override)}`;
}

/** A source's name as the API shows it: the key spec (`"ip"`), or an array of them for a composite key. */
export function sourceView(name: string): string | string[] {
  return name.startsWith("[") ? splitKeyParts(name.slice(1, -1)) : name;
}

/** An override as the API answers and lists it: `period` in ms, `expiresAt` as an ISO date. */
export interface OverrideView {
  policy: string;
  key: string;
  /** The key source it is for; absent: keys given to /v1/check, RPC and rateLimit(). */
  source?: string | string[];
  limit?: number;
  burst?: number;
  /** ms. */
  period?: number;
  /** ISO 8601. */
  expiresAt?: string;
}

/** The latest instant a Date holds (ECMA-262 §21.4.1.1); a stored expiry past it is read as none. */
const MAX_DATE_MS = 8.64e15;

/** An override as the API lists it: `period` in ms, `expiresAt` as an ISO date. */
export function overrideView(override: Override): OverrideView {
  const view: OverrideView = { policy: override.policy, key: override.key };
  if (override.source !== undefined) view.source = sourceView(override.source);
  if (override.limit !== undefined) view.limit = override.limit;
  if (override.burst !== undefined) view.burst = override.burst;
  if (override.periodMs !== undefined) view.period = override.periodMs;
  if (override.expiresAtMs !== undefined && Math.abs(override.expiresAtMs) <= MAX_DATE_MS) view.expiresAt = new Date(override.expiresAtMs).toISOString();
  return view;
}

const positiveInt = (value: unknown): value is number => Number.isSafeInteger(value) && (value as number) > 0;

/**
 * An override as a table stored it (JSON), or undefined for a row that is not one. Rows
 * written before validation had its bounds are read leniently: an `expiresAtMs` past the last
 * date a Date holds (9007199254740991 was once accepted) means no expiry, so listing never
 * fails on it and the row can be seen, replaced or deleted.
 */
export function decodeOverride(text: string): Override | undefined {
  let raw: Record<string, unknown>;
  try {
    raw = JSON.parse(text) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (raw === null || typeof raw !== "object" || typeof raw.policy !== "string" || typeof raw.key !== "string") return undefined;
  const override: Override = { policy: raw.policy, key: raw.key };
  if (typeof raw.source === "string") override.source = raw.source;
  if (positiveInt(raw.limit)) override.limit = raw.limit;
  if (positiveInt(raw.burst)) override.burst = raw.burst;
  if (positiveInt(raw.periodMs)) override.periodMs = raw.periodMs;
  if (typeof raw.expiresAtMs === "number" && Number.isFinite(raw.expiresAtMs) && Math.abs(raw.expiresAtMs) <= MAX_DATE_MS) override.expiresAtMs = raw.expiresAtMs;
  return override;
}
