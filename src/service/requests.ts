import * as z from "zod/mini";
import { assertDebitable } from "../core/debit.js";
import { POLICY_TAKES, type PolicyCatalog, resolvePolicies } from "../core/policy.js";
import type { CheckMode, CreditsChange, Policy } from "../core/types.js";
import { MAX_BALANCE } from "../core/credits.js";
import { type KeySource, apiStoreKey, parseKeySource, sourceName, sourceStoreKey } from "../overrides/key-source.js";
import { ValidationError, describeValue, described, integerIn, parseWith } from "../core/validation.js";
import { MAX_KEY_BYTES, keyFitsBytes } from "../core/wire.js";

/** Reserve mode only computes a slot, so it may look far ahead. */
export const MAX_RESERVE_WAIT_MS = 86_400_000;
/** acquire holds a connection open while it waits: keep that bounded. */
export const MAX_ACQUIRE_WAIT_MS = 300_000;
export const MAX_LEASE_MS = 366 * 86_400_000;
/** The latest time a Date can hold: a refund's spentAtMs is a time, not a count. */
const MAX_SPENT_AT_MS = 8.64e15;

const encoder = new TextEncoder();

const key = z.string({ error: "must be a string of 1 to 512 UTF-8 bytes" }).check(
  z.superRefine((value: string, ctx) => {
    if (value.length > 0 && keyFitsBytes(value)) return; // most keys fit without being encoded
    const bytes = encoder.encode(value).length;
    if (bytes < 1 || bytes > MAX_KEY_BYTES) ctx.addIssue({ code: "custom", message: `must be 1 to ${MAX_KEY_BYTES} UTF-8 bytes, got ${bytes} bytes` });
  }),
);
/** Checked by resolvePolicies once the body's shape is known; said here for "is required (…)". */
const policy = described(z.unknown(), POLICY_TAKES);
const leaseId = z.string({ error: "must be a lease id string" }).check(z.minLength(1, { error: "must not be empty" }), z.maxLength(128, { error: "must be at most 128 characters" }));

const checkBody = z.strictObject({
  key,
  policy,
  // Negative only with mode "debit" (a refund): parseCheck says so naming cost.
  cost: z._default(integerIn(-1e9, 1e9), 1),
  mode: z._default(z.enum(["reject", "reserve", "debit"], { error: 'must be "reject", "reserve" or "debit"' }), "reject"),
  maxWaitMs: z._default(integerIn(0, MAX_RESERVE_WAIT_MS), 0),
  // A refund's spend time (ms since the epoch, the caller's Date.now() when it reserved).
  spentAtMs: z.optional(integerIn(0, MAX_SPENT_AT_MS)),
});
const keyAndPolicy = z.strictObject({ key, policy });
const acquireBody = z.strictObject({
  key,
  policy,
  maxWaitMs: z._default(integerIn(0, MAX_ACQUIRE_WAIT_MS), 0),
  leaseMs: z.optional(integerIn(1, MAX_LEASE_MS)),
});
const releaseBody = z.strictObject({ key, policy, leaseId });
const extendBody = z.strictObject({ key, policy, leaseId, leaseMs: z.optional(integerIn(1, MAX_LEASE_MS)) });
const creditsBody = z.strictObject({
  key,
  policy,
  add: z.optional(integerIn(0, MAX_BALANCE)),
  set: z.optional(integerIn(0, MAX_BALANCE)),
  source: z.optional(z.union([z.string(), z.array(z.string())], { error: 'must be a route\'s key source like "header:x-api-key", or an array of them for a composite key' })),
});

export interface CheckRequest {
  key: string;
  policies: Policy[];
  cost: number;
  /**
   * "debit": consume cost even past the limit (SPEC §2), answered 200 with the state after it;
   * a negative cost (only with "debit") is a refund.
   */
  mode: CheckMode | "debit";
  maxWaitMs: number;
  /**
   * With "debit": when a refund's units were spent (ms since the epoch), so they go back to the
   * window they were spent in (Limiter.debit); ignored for a positive cost.
   */
  spentAtMs?: number;
}
export interface KeyRequest {
  key: string;
  policies: Policy[];
}
export interface AcquireRequest extends KeyRequest {
  maxWaitMs: number;
  leaseMs?: number;
}
export interface ReleaseRequest extends KeyRequest {
  leaseId: string;
}
export interface ExtendRequest extends ReleaseRequest {
  leaseMs?: number;
}
export interface CreditsRequest {
  key: string;
  /** One credits policy (a balance is one policy's, never a stack's). */
  policy: Policy;
  change: CreditsChange;
  /**
   * The name of the gateway key source the key is a value of (`header:x-api-key`), when the
   * body names one: the balance is then the one that source's routes spend, stored under
   * `<source>:<key>`, and the overrides of that source apply (docs/overrides.md).
   */
  source?: string;
  /** The source as the body wrote it, parsed (its parts, for the check against the routes). */
  keySource?: KeySource;
}

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== "object" || Array.isArray(body)) throw new ValidationError("body", `must be a JSON object, got ${describeValue(body)}`);
  return body as Record<string, unknown>;
}

function requirePolicy(body: Record<string, unknown>, catalog: PolicyCatalog): Policy[] {
  return resolvePolicies(body.policy, catalog, "policy");
}

/** Lease operations only make sense on concurrency policies. */
function requireConcurrency(policies: Policy[]): Policy[] {
  const other = policies.find((policy) => policy.algorithm !== "concurrency");
  if (other) throw new ValidationError("policy", `"${other.name}" is ${other.algorithm}; acquire, release and extend take concurrency policies (use check for rate limits)`);
  return policies;
}

/** Body of POST /v1/check (and the RPC `check`). */
export function parseCheck(body: unknown, catalog: PolicyCatalog): CheckRequest {
  const parsed = parseWith(checkBody, object(body), "");
  const policies = requirePolicy(object(body), catalog);
  if (parsed.mode === "debit") assertDebitable(policies);
  else if (parsed.cost < 0) throw new ValidationError("cost", `must be an integer from 0 to 1000000000 with mode "${parsed.mode}" (a negative cost is a refund: mode "debit"), got ${parsed.cost}`);
  if (parsed.spentAtMs !== undefined && parsed.mode !== "debit") throw new ValidationError("spentAtMs", `is a refund's spend time, for mode "debit" only (mode is "${parsed.mode}")`);
  const request: CheckRequest = { key: parsed.key, policies, cost: parsed.cost, mode: parsed.mode, maxWaitMs: parsed.maxWaitMs };
  if (parsed.spentAtMs !== undefined) request.spentAtMs = parsed.spentAtMs;
  return request;
}

/** Body of POST /v1/peek and /v1/reset. */
export function parseKeyRequest(body: unknown, catalog: PolicyCatalog): KeyRequest {
  const parsed = parseWith(keyAndPolicy, object(body), "");
  return { key: parsed.key, policies: requirePolicy(object(body), catalog) };
}

export function parseAcquire(body: unknown, catalog: PolicyCatalog): AcquireRequest {
  const parsed = parseWith(acquireBody, object(body), "");
  return { key: parsed.key, policies: requireConcurrency(requirePolicy(object(body), catalog)), maxWaitMs: parsed.maxWaitMs, leaseMs: parsed.leaseMs };
}

export function parseRelease(body: unknown, catalog: PolicyCatalog): ReleaseRequest {
  const parsed = parseWith(releaseBody, object(body), "");
  return { key: parsed.key, policies: requireConcurrency(requirePolicy(object(body), catalog)), leaseId: parsed.leaseId };
}

export function parseExtend(body: unknown, catalog: PolicyCatalog): ExtendRequest {
  const parsed = parseWith(extendBody, object(body), "");
  return { key: parsed.key, policies: requireConcurrency(requirePolicy(object(body), catalog)), leaseId: parsed.leaseId, leaseMs: parsed.leaseMs };
}

/**
 * Body of POST /v1/credits (and the RPC `credits`): `{ key, policy, add | set }`, one policy
 * (a name or an inline policy) that is `credits`; `add` and `set` are integers 0 … 1e15 (MAX_BALANCE), exactly
 * one of them. Each refusal names its field.
 */
export function parseCredits(body: unknown, catalog: PolicyCatalog): CreditsRequest {
  const parsed = parseWith(creditsBody, object(body), "");
  const raw = object(body);
  if (Array.isArray(raw.policy)) throw new ValidationError("policy", "must be one credits policy (a name or a policy object), not a stack");
  const [policy] = requirePolicy(raw, catalog);
  if (policy!.algorithm !== "credits") throw new ValidationError("policy", `"${policy!.name}" is ${policy!.algorithm}; /v1/credits changes the balance of a credits policy`);
  if (parsed.add === undefined && parsed.set === undefined) throw new ValidationError("add", "is required (or set): the amount to add to the balance, or set it to");
  if (parsed.add !== undefined && parsed.set !== undefined) throw new ValidationError("set", "give add or set, not both");
  const request: CreditsRequest = { key: parsed.key, policy: policy!, change: parsed.add !== undefined ? { add: parsed.add } : { set: parsed.set! } };
  if (parsed.source !== undefined) {
    const source = parseKeySource(parsed.source);
    if (typeof source === "string") throw new ValidationError("source", source);
    request.source = sourceName(source);
    request.keySource = source;
  }
  return request;
}

/** The store key of a credits request: the API's (apiStoreKey), or, with a source, the key that source's gateway routes count it under. */
export function creditsStoreKey(request: CreditsRequest): string | Promise<string> {
  return request.source === undefined ? apiStoreKey(request.key) : sourceStoreKey(request.source, request.key);
}
