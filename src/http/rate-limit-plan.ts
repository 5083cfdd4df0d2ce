import { parsePolicyList } from "../core/policy.js";
import type { Decision, Policy } from "../core/types.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { MAX_DELAY_MS } from "../config/schema.js";
import type { LimitPlan, LogFn } from "./limit.js";
import { type Limiter, OverloadedError, StoreFaultError, StoreUnavailableError } from "../core/limiter.js";
import { MAX_KEY_BYTES, keyFitsBytes } from "../core/wire.js";
import { type Problem, problem, problemFor } from "./problems.js";
import { joinKeyParts } from "../overrides/key-parts.js";
import { Overrides } from "../overrides/overrides.js";
import { parseOverrideList } from "../overrides/parse.js";
import type { HeaderStyle } from "../core/header-styles.js";
import { checkOptionNames, headerStyleOption } from "./middleware-options.js";
import { apiStoreKey } from "../overrides/key-source.js";

/**
 * The runtime-neutral half of `rateLimit()`: its options (all but the key function, whose
 * argument is the runtime's request), their validation, and the key rule. Hono's middleware
 * (spillway/hono) and the Node one (spillway/node) are both built on it.
 */

/** A policy as written in config (README "Algorithms"): `{ name, algorithm, limit, period, ... }`. */
export type PolicyInput = Record<string, unknown>;

/** The options of every `rateLimit()` but `key`. */
export interface RateLimitBaseOptions {
  /** Where counts live: MemoryStore, DurableObjectStore, RedisStore, or any Limiter. */
  store: Limiter;
  /** One policy or a stack (all must admit), validated when the middleware is built. */
  policies: PolicyInput | readonly PolicyInput[];
  /**
   * `reject`: 429 at once. `delay`: hold the request until its slot, up to maxDelayMs.
   * @default "reject"
   */
  onLimit?: "reject" | "delay";
  /** delay only: the longest a request is held, in ms (1 … 300000). */
  maxDelayMs?: number;
  /**
   * Never block; report in headers (Spillway-Dry-Run) and logs.
   * @default false
   */
  dryRun?: boolean;
  /**
   * Add X-RateLimit-Limit/Remaining/Reset.
   * @default false
   */
  legacyHeaders?: boolean;
  /**
   * Which rate-limit fields answers carry: `"draft-10"` (`RateLimit-Policy` and `RateLimit`,
   * one item per policy), `"draft-7"` (`RateLimit: limit=…, remaining=…, reset=…`),
   * `"draft-6"` (`RateLimit-Limit`, `-Remaining`, `-Reset`) or `"legacy"` (`X-RateLimit-*`).
   * Denials carry Retry-After in every style.
   * @default "draft-10"
   */
  headers?: HeaderStyle;
  /** Structured log lines (dry-run denials, lease and store errors). Default: one JSON line on stdout. */
  log?: LogFn;
  /**
   * Per-key limits, as in a config's `overrides` (docs/overrides.md): `{ key, limit?, burst?,
   * period?, policy? }`, where `key` is what the key function answers (an array joined as
   * `a|b`) and a trailing `*` is a prefix wildcard. `policy` may be left out when there is one.
   */
  overrides?: readonly OverrideInput[];
}

/** One override of rateLimit(): a config override whose `policy` may be left out when the middleware has one policy. */
export interface OverrideInput {
  policy?: string;
  key: string;
  limit?: number;
  burst?: number;
  period?: string | number;
  expiresAt?: string | number;
}

/**
 * What a key function may answer: undefined, null or "" mean "this request carries no key".
 * An array is a composite key: every part must be a non-empty string; they are joined as
 * `part|part` (a `|` or `\` inside a part escaped with `\`), the form overrides match.
 */
export type RateLimitKey = string | undefined | null | readonly (string | undefined | null)[];

function fail(option: string, message: string): never {
  throw new TypeError(`rateLimit: ${option} ${message}`);
}

/**
 * Validates the options once, at build time, naming the bad option and its value.
 * `keyShape` is how the key function is written on this runtime, for the message.
 */
export function rateLimitPlan(options: RateLimitBaseOptions & { key: unknown }, keyShape: string): LimitPlan {
  if (options === null || typeof options !== "object") fail("options", `must be an object, got ${describeValue(options)}`);
  checkOptionNames(options);
  const headerStyle = headerStyleOption(options.headers);
  const store = options.store as Partial<Limiter> | undefined;
  if (!store || typeof store.check !== "function" || typeof store.release !== "function") {
    fail("store", `must be a Limiter (MemoryStore, DurableObjectStore, RedisStore), got ${describeValue(options.store)}`);
  }
  if (typeof options.key !== "function") fail("key", `must be a function ${keyShape}, got ${describeValue(options.key)}`);
  const onLimit = options.onLimit ?? "reject";
  if (onLimit !== "reject" && onLimit !== "delay") fail("onLimit", `must be "reject" or "delay", got ${describeValue(onLimit)}`);
  const maxDelayMs = options.maxDelayMs ?? 0;
  if (!Number.isInteger(maxDelayMs) || maxDelayMs < 0 || maxDelayMs > MAX_DELAY_MS) fail("maxDelayMs", `must be an integer from 0 to ${MAX_DELAY_MS}, got ${describeValue(maxDelayMs)}`);
  if (onLimit === "delay" && maxDelayMs === 0) fail("maxDelayMs", 'must be above 0 when onLimit is "delay", got 0');
  if (onLimit === "reject" && maxDelayMs > 0) fail("maxDelayMs", `is only used with onLimit "delay", got ${maxDelayMs}`);
  for (const flag of ["dryRun", "legacyHeaders"] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== "boolean") fail(flag, `must be true or false, got ${describeValue(options[flag])}`);
  }
  if (options.log !== undefined && typeof options.log !== "function") fail("log", `must be a function (entry) => void, got ${describeValue(options.log)}`);
  const list = Array.isArray(options.policies) ? options.policies : [options.policies];
  if (list.length === 0) fail("policies", "must hold at least one policy, got []");
  let policies: Policy[];
  try {
    policies = parsePolicyList(list, "policies");
  } catch (error) {
    // Same rule text as the config validator, as a TypeError: a build-time programming error.
    if (error instanceof ValidationError) throw new TypeError(`rateLimit: ${error.message}`);
    throw error;
  }
  const overrides = middlewareOverrides(options.overrides, policies);
  const style = headerStyle === "draft-10" ? {} : { headerStyle };
  return { policies, onLimit, maxDelayMs, dryRun: options.dryRun ?? false, legacyHeaders: options.legacyHeaders ?? false, ...style, ...(overrides ? { overrides } : {}) };
}

/** The `overrides` option, validated as a config's are (errors name `overrides.N.field`). */
function middlewareOverrides(input: unknown, policies: readonly Policy[]): Overrides | undefined {
  if (input === undefined) return undefined;
  if (!Array.isArray(input)) fail("overrides", `must be an array like [{ key: "acme-*", limit: 6000 }], got ${describeValue(input)}`);
  const catalog = new Map(policies.map((policy) => [policy.name, policy]));
  const list = input.map((item: unknown, index) => {
    if (item === null || typeof item !== "object" || Array.isArray(item)) return item;
    // The middleware's keys come from its `key` function, not a key source: such an override would never apply.
    if ((item as { source?: unknown }).source !== undefined) fail(`overrides.${index}.source`, "is for a gateway route's key source; the middleware's keys come from its key function, so leave source out");
    if ((item as { policy?: unknown }).policy !== undefined) return item;
    if (policies.length > 1) fail(`overrides.${index}.policy`, `is required when the middleware stacks policies (${policies.map((policy) => policy.name).join(", ")})`);
    return { ...item, policy: policies[0]!.name };
  });
  try {
    const configured = parseOverrideList(list, catalog);
    return configured.length === 0 ? undefined : new Overrides({ catalog, configured });
  } catch (error) {
    if (error instanceof ValidationError) throw new TypeError(`rateLimit: ${error.message}`);
    throw error;
  }
}

/**
 * The key a key function answered, as the limiter counts it: a string, or an array's parts
 * joined (joinKeyParts); else the 400 for a request without a usable key (never counted
 * under one empty key shared by all).
 */
export function requestKey(key: RateLimitKey): string | Problem {
  let joined: unknown = key;
  if (Array.isArray(key)) {
    const missing = key.findIndex((part) => typeof part !== "string" || part === "");
    if (missing >= 0 || key.length === 0) return problem(400, `the request carries no rate-limit key: part ${Math.max(missing, 0)} of the composite key is missing`);
    joined = joinKeyParts(key as string[]);
  }
  if (typeof joined !== "string" || joined === "") return problem(400, "the request carries no rate-limit key");
  if (!keyFitsBytes(joined)) return problem(400, `the rate-limit key is over ${MAX_KEY_BYTES} bytes`);
  return joined;
}

/**
 * What your handler reads of the decision that let its request in: `req.rateLimit` (Express,
 * node:http) or `c.get("rateLimit")` (Hono). The decision's fields (SPEC §2, times in ms:
 * `limit`, `remaining`, `resetMs`, `policy`, each of `policies`), and the key it was counted
 * under. With `count` or a response `cost`, it is the state before the request's debit.
 */
export interface RateLimitInfo extends Decision {
  /** The key as the key function answered it (a composite key's parts joined `a|b`). */
  key: string;
  /** With `estimate` (reserve, then settle): the units reserved for this request. */
  estimate?: number;
  /**
   * With `estimate`: settles the reservation with what the request used, once (docs/counting.md,
   * "Reserve, then settle"): used − estimate is debited, a refund when negative (unused units
   * go back to the window they were reserved in), past the limit when positive. `undefined` or
   * another unusable value keeps the reservation as it is. A second call throws; a request
   * never settled keeps its reservation. It may be called after the answer went out (a stream
   * whose usage comes at its end). Resolves once the store has it; never rejects for a store
   * failure (logged as `debit-failed`). Without `estimate` it throws, naming the option.
   * @example await c.get("rateLimit")?.settle(completion.usage?.total_tokens)
   */
  settle(used: number | undefined): Promise<void>;
}

/** A middleware without `estimate` has nothing to settle: one function for every such info. */
function noReservation(): Promise<void> {
  throw new TypeError("rateLimit: settle() settles a reservation, which the middleware takes with its estimate option (estimate: (req) => number); this one has none");
}

/** The info a handler reads, or undefined when there is no decision (a dry run whose store failed). */
export function rateLimitInfo(key: string, decision: Decision | undefined, reservation?: { estimate: number; settle(used: unknown): Promise<unknown> }): RateLimitInfo | undefined {
  if (!decision) return undefined;
  if (!reservation) return { ...decision, key, settle: noReservation };
  return { ...decision, key, estimate: reservation.estimate, settle: (used) => reservation.settle(used).then(() => undefined) };
}

/**
 * The middleware's `resetKey(key)`: forgets what its store holds for `key` under each of its
 * policies (a fresh budget: after a successful login, say). `key` is what the key function
 * answers; an array is a composite key, joined as the middleware joins it.
 */
export function resetKeyOf(store: Limiter, plan: LimitPlan): (key: RateLimitKey) => Promise<void> {
  return async (key) => {
    const found = requestKey(key);
    if (typeof found !== "string") throw new TypeError(`resetKey: key must be what the key function answers (a non-empty string, or an array of them), got ${describeValue(key)}`);
    // The middleware keeps its keys in their own namespace (apiStoreKey): reset that one.
    await store.reset(apiStoreKey(found), plan.policies);
  };
}

/** The 400 for a request without a usable key, or undefined (see requestKey). */
export function keyProblem(key: unknown): Problem | undefined {
  const found = requestKey(key as RateLimitKey);
  return typeof found === "string" ? undefined : found;
}

/**
 * The answer of a middleware whose store could not decide (failMode closed) or faulted: the
 * 503 problem `spillway serve` answers, logged once. Undefined for any other error, which is
 * the app's to handle.
 */
export function storeFailureProblem(error: unknown, log: LogFn, route: string): Problem | undefined {
  // Shed (overloaded): answered 503 with Retry-After, not logged per request of a burst.
  if (error instanceof OverloadedError) return problemFor(error);
  if (!(error instanceof StoreUnavailableError) && !(error instanceof StoreFaultError)) return undefined;
  log({ event: error instanceof StoreFaultError ? "store-fault" : "store-unavailable", route, error: String(error) });
  return problemFor(error);
}
