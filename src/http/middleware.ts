import type { Context, Env, MiddlewareHandler } from "hono";
import { describe } from "../core/duration.js";
import { parsePolicyList } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { ValidationError } from "../core/validation.js";
import { MAX_DELAY_MS } from "../gateway/config.js";
import { type HeldLease, type LimitPlan, type LogFn, defaultLog, deferOf, limitRequest, onBodyDone } from "../gateway/limit.js";
import type { Limiter } from "../limiter.js";
import { MAX_KEY_BYTES } from "../requests.js";
import { problem, problemResponse } from "./problems.js";

/** A policy as written in config (SPEC §1): `{ name, algorithm, limit, period, ... }`. */
export type PolicyInput = Record<string, unknown>;

export interface RateLimitOptions<E extends Env = Env> {
  /** Where counts live: MemoryStore, DurableObjectStore, RedisStore, or any Limiter. */
  store: Limiter;
  /** One policy or a stack (all must admit), validated when the middleware is built. */
  policies: PolicyInput | readonly PolicyInput[];
  /**
   * The key a request is counted under. Return undefined (or "") when the request carries
   * none: it is answered 400, never counted under one empty key shared by everybody.
   */
  key: (c: Context<E>) => string | undefined | null | Promise<string | undefined | null>;
  /** `reject` (default): 429 at once. `delay`: hold the request until its slot, up to maxDelayMs. */
  onLimit?: "reject" | "delay";
  /** delay only: the longest a request is held, in ms (1 … 300000). */
  maxDelayMs?: number;
  /** Never block; report in headers (Spillway-Dry-Run) and logs. */
  dryRun?: boolean;
  /** Add X-RateLimit-Limit/Remaining/Reset. */
  legacyHeaders?: boolean;
  log?: LogFn;
}

const encoder = new TextEncoder();

function fail(option: string, message: string): never {
  throw new TypeError(`rateLimit: ${option} ${message}`);
}

/** Validates the options once, at build time, naming the bad option and its value. */
function validate<E extends Env>(options: RateLimitOptions<E>): LimitPlan {
  if (options === null || typeof options !== "object") fail("options", `must be an object, got ${describe(options)}`);
  const store = options.store as Partial<Limiter> | undefined;
  if (!store || typeof store.check !== "function" || typeof store.release !== "function") {
    fail("store", `must be a Limiter (MemoryStore, DurableObjectStore, RedisStore), got ${describe(options.store)}`);
  }
  if (typeof options.key !== "function") fail("key", `must be a function (c) => string, got ${describe(options.key)}`);
  const onLimit = options.onLimit ?? "reject";
  if (onLimit !== "reject" && onLimit !== "delay") fail("onLimit", `must be "reject" or "delay", got ${describe(onLimit)}`);
  const maxDelayMs = options.maxDelayMs ?? 0;
  if (!Number.isInteger(maxDelayMs) || maxDelayMs < 0 || maxDelayMs > MAX_DELAY_MS) fail("maxDelayMs", `must be an integer from 0 to ${MAX_DELAY_MS}, got ${describe(maxDelayMs)}`);
  if (onLimit === "delay" && maxDelayMs === 0) fail("maxDelayMs", 'must be above 0 when onLimit is "delay", got 0');
  if (onLimit === "reject" && maxDelayMs > 0) fail("maxDelayMs", `is only used with onLimit "delay", got ${maxDelayMs}`);
  for (const flag of ["dryRun", "legacyHeaders"] as const) {
    if (options[flag] !== undefined && typeof options[flag] !== "boolean") fail(flag, `must be true or false, got ${describe(options[flag])}`);
  }
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
  return { policies, onLimit, maxDelayMs, dryRun: options.dryRun ?? false, legacyHeaders: options.legacyHeaders ?? false };
}

function withHeaders(c: Context, headers: Record<string, string>, lease: HeldLease | undefined): void {
  if (lease && c.res.body) {
    const body = c.res.body;
    // Hono re-wraps an assigned response into a fresh, mutable one.
    c.res = new Response(onBodyDone(body, () => void lease.release()), c.res);
  } else if (lease) {
    void lease.release();
  }
  try {
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  } catch {
    // A Response straight from fetch() has immutable headers: let Hono copy it, then add ours.
    c.res = new Response(c.res.body, c.res);
    for (const [name, value] of Object.entries(headers)) c.res.headers.set(name, value);
  }
}

/**
 * Rate limiting for your own Hono app, on Workers or Node. Answers 429 with Retry-After,
 * the RateLimit fields and a quota-exceeded problem body; admitted answers carry the
 * RateLimit fields. Concurrency policies hold a lease until the answer's body ends.
 * Bad options throw a TypeError naming the option when the middleware is built.
 *
 * @example
 * import { MemoryStore, rateLimit } from "spillway/hono";
 * app.use("/api/*", rateLimit({
 *   store: new MemoryStore(),
 *   policies: { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" },
 *   key: (c) => c.req.header("x-api-key"),
 * }));
 */
export function rateLimit<E extends Env = Env>(options: RateLimitOptions<E>): MiddlewareHandler<E> {
  const plan = validate(options);
  const { store, key: keyOf } = options;
  const log = options.log ?? defaultLog;
  return async function spillwayRateLimit(c, next) {
    const key = await keyOf(c);
    if (typeof key !== "string" || key === "") return problemResponse(problem(400, "the request carries no rate-limit key"));
    if (encoder.encode(key).length > MAX_KEY_BYTES) return problemResponse(problem(400, `the rate-limit key is over ${MAX_KEY_BYTES} bytes`));
    const outcome = await limitRequest(store, key, plan, { signal: c.req.raw.signal, label: c.req.routePath, log, defer: deferOf(c) });
    if (!outcome.admitted) return outcome.response;
    try {
      await next();
    } catch (error) {
      await outcome.lease?.release();
      throw error;
    }
    withHeaders(c, outcome.headers, outcome.lease);
  };
}
