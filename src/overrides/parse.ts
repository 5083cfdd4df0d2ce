import * as z from "zod/mini";
import { MAX_SLIDING_LOG_LIMIT, MAX_LIMIT, durationSchema, type PolicyCatalog, UnknownPolicyError } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue, integerIn, parseWith } from "../core/validation.js";
import { MAX_KEY_BYTES, keyFitsBytes } from "../wire.js";

/**
 * One override (docs/overrides.md): a (policy, key) with its own `limit`, `burst` or `period`.
 * `key` is the rate-limit key as the user knows it (a route's key value, a composite key's
 * joined form, the `key` of /v1/check); a trailing `*` makes it a prefix wildcard.
 */
export interface Override {
  policy: string;
  key: string;
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

/** An override as written in config or a PUT body. */
export const overrideSchema = z.strictObject(
  {
    policy: z.string({ error: "must be a policy name from the config" }),
    key: overrideKey,
    limit: z.optional(integerIn(1, MAX_LIMIT, "a positive integer")),
    burst: z.optional(integerIn(1, MAX_LIMIT, "a positive integer")),
    period: z.optional(durationSchema),
    expiresAt: z.optional(expiresAtSchema),
  },
  { error: 'must be an object like { "policy": "per-key", "key": "acme-*", "limit": 6000 }' },
);

function parseExpiresAt(value: string | number, field: string, nowMs: number): number {
  const ms = typeof value === "number" ? value : Date.parse(value);
  if (!Number.isFinite(ms) || (typeof value === "string" && !/^\d{4}-\d\d-\d\d/.test(value))) {
    throw new ValidationError(field, `must be epoch milliseconds or an ISO 8601 date like "2026-12-31T00:00:00Z", got ${describeValue(value)}`);
  }
  if (ms <= nowMs) throw new ValidationError(field, `must be in the future, got ${describeValue(value)}`);
  return ms;
}

/**
 * Validates one override against the policy it names: the policy must be in the config, and the
 * override may change only what that policy's algorithm uses (never the algorithm). Errors name
 * the field: `overrides.0.burst: is only used by gcra and token-bucket, got 5`.
 */
export function parseOverride(input: unknown, catalog: PolicyCatalog, field: string, nowMs = Date.now()): Override {
  const raw = parseWith(overrideSchema, input, field);
  const at = (sub: string) => (field ? `${field}.${sub}` : sub);
  const base = catalog.get(raw.policy);
  if (!base) throw new UnknownPolicyError(at("policy"), raw.policy);
  if (raw.limit === undefined && raw.burst === undefined && raw.period === undefined) {
    throw new ValidationError(field || "body", "must set at least one of limit, burst and period");
  }
  const usesBurst = base.algorithm === "gcra" || base.algorithm === "token-bucket";
  if (raw.burst !== undefined && !usesBurst) throw new ValidationError(at("burst"), `is only used by gcra and token-bucket; "${base.name}" is ${base.algorithm}, got ${raw.burst}`);
  if (raw.period !== undefined && (base.calendar || base.algorithm === "credits")) {
    throw new ValidationError(at("period"), `is not used by "${base.name}" (${base.calendar ? "its windows are calendar windows" : "a balance has no period"}), got ${describeValue((input as { period?: unknown }).period)}`);
  }
  if (raw.period !== undefined && base.algorithm === "concurrency") throw new ValidationError(at("period"), `is not used by concurrency ("${base.name}"), got ${describeValue((input as { period?: unknown }).period)}`);
  if (base.algorithm === "sliding-log" && raw.limit !== undefined && raw.limit > MAX_SLIDING_LOG_LIMIT) {
    throw new ValidationError(at("limit"), `must be at most ${MAX_SLIDING_LOG_LIMIT} for sliding-log ("${base.name}"), got ${raw.limit}`);
  }
  const override: Override = { policy: raw.policy, key: raw.key };
  if (raw.limit !== undefined) override.limit = raw.limit;
  if (raw.burst !== undefined) override.burst = raw.burst;
  if (raw.period !== undefined) override.periodMs = raw.period;
  if (raw.expiresAt !== undefined) override.expiresAtMs = parseExpiresAt(raw.expiresAt, at("expiresAt"), nowMs);
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
      override = parseOverride(item, catalog, field);
    } catch (error) {
      // A config naming a policy it lacks is a config error like any other.
      if (error instanceof UnknownPolicyError) throw new ValidationError(error.field, error.message.slice(error.field.length + 2));
      throw error;
    }
    const id = `${override.policy}\n${override.key}`;
    if (seen.has(id)) throw new ValidationError(`${field}.key`, `overrides "${override.key}" of "${override.policy}" twice`);
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

/** An override as the API answers and lists it: `period` in ms, `expiresAt` as an ISO date. */
export interface OverrideView {
  policy: string;
  key: string;
  limit?: number;
  burst?: number;
  /** ms. */
  period?: number;
  /** ISO 8601. */
  expiresAt?: string;
}

/** An override as the API lists it: `period` in ms, `expiresAt` as an ISO date. */
export function overrideView(override: Override): OverrideView {
  const view: OverrideView = { policy: override.policy, key: override.key };
  if (override.limit !== undefined) view.limit = override.limit;
  if (override.burst !== undefined) view.burst = override.burst;
  if (override.periodMs !== undefined) view.period = override.periodMs;
  if (override.expiresAtMs !== undefined) view.expiresAt = new Date(override.expiresAtMs).toISOString();
  return view;
}
