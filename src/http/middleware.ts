import { apiStoreKey } from "../overrides/key-source.js";
import type { Context, Env, MiddlewareHandler } from "hono";
import { type CountOption, type CostOption, type CountingPlan, type EstimateOption, checkedCost, checkedEstimate, countingPlan } from "./counting-options.js";
import { peekRequest } from "./count-limit.js";
import { reserveRequest } from "./count-reserve.js";
import { holdReservation } from "./reservation.js";
import { type HeldLease, type LimitContext, type LimitOutcome, deferOf, defaultLog, limitRequest, onBodyDone } from "./limit.js";
import { problemResponse } from "./problems.js";
import type { Decision } from "../core/types.js";
import { type RateLimitBaseOptions, type RateLimitInfo, type RateLimitKey, rateLimitInfo, rateLimitPlan, requestKey, resetKeyOf, storeFailureProblem } from "./rate-limit-plan.js";
import { type Denial, denialOf, functionOption } from "./middleware-options.js";

export type { PolicyInput, RateLimitInfo } from "./rate-limit-plan.js";
export type { CountOption, CostOption, EstimateOption, StatusClass } from "./counting-options.js";
export type { Denial } from "./middleware-options.js";
export type { HeaderStyle } from "../core/header-styles.js";

export interface RateLimitOptions<E extends Env = Env> extends RateLimitBaseOptions {
  /**
   * The key a request is counted under (an array is a composite key, joined as `a|b`). Return undefined (or "") when the request carries
   * none: it is answered 400, never counted under one empty key shared by everybody.
   */
  key: (c: Context<E>) => RateLimitKey | Promise<RateLimitKey>;
  /**
   * Count only some answers: statuses (`[401, 403]`, `"5xx"`) or `(res, c) => boolean`. The
   * request is peeked before your handler (refused only when nothing is left) and its cost
   * debited after it when its answer counts; the answer's RateLimit fields show the state after.
   * Requests in flight together may run a key up to (their number − 1) past its limit.
   * @default every request counts, before your handler runs
   */
  count?: CountOption<Response, Context<E>>;
  /**
   * What a request costs: a constant, `{ request: (c) => number }` (checked before your
   * handler at that cost) or `{ response: (res, c) => number }` (debited after it).
   * @default 1
   */
  cost?: CostOption<Response, Context<E>>;
  /**
   * Reserve, then settle (docs/counting.md): what a request is expected to cost, a constant or
   * `(c) => number` read before your handler runs (an LLM call's `max_tokens` plus its prompt).
   * It is checked and consumed like a cost, all-or-nothing over the policies: a request whose
   * reservation does not fit is answered 429 before your handler runs. Your handler then
   * settles what it used, once: `await c.get("rateLimit")?.settle(usage.total_tokens)` (unused
   * units go back, an excess is charged), or `cost: { response }` settles from the answer when
   * the handler did not. Never settled (the handler threw, or had no usage): the reservation
   * stands. Requests in flight together overspend by at most the sum of their estimate errors.
   * An estimate that is not a whole number reserves the policies' least burst, logged.
   */
  estimate?: EstimateOption<Context<E>>;
  /**
   * Requests for which it answers true pass unlimited: not counted, no rate-limit fields
   * (health checks, an allow list). May be async.
   */
  skip?: (c: Context<E>) => boolean | Promise<boolean>;
  /**
   * Answers a denial your way instead of the 429 problem: `denial` holds Spillway's answer
   * (its status, fields and problem body); the rate-limit fields and Retry-After are added to
   * your Response unless it sets them.
   * @example handler: (c, denial) => c.json({ error: "slow down" }, 429)
   */
  handler?: (c: Context<E>, denial: Denial) => Response | Promise<Response>;
}

/**
 * The variable `rateLimit()` sets on a request it let through, before your handler runs:
 * `c.get("rateLimit")` (undefined for a request `skip` passed). Typed in a handler chained after
 * the middleware (`app.use(rateLimit(…)).get(…)`), or with `new Hono<RateLimitEnv>()`.
 */
export type RateLimitEnv = { Variables: { rateLimit: RateLimitInfo | undefined } };

/** The middleware `rateLimit()` returns: a Hono middleware that sets `rateLimit`, and `resetKey`. */
export type RateLimitMiddleware<E extends Env = Env> = MiddlewareHandler<E & RateLimitEnv> & {
  /**
   * Forgets the middleware's counts for `key` (what the key function answers) under each of its
   * policies, in its store: a fresh budget, e.g. after a successful login.
   * @example await limiter.resetKey(user.id)
   */
  resetKey(key: RateLimitKey): Promise<void>;
};

/** Hands the handler the decision that let its request in (and its reservation's settle, with `estimate`). */
function expose(c: Context, key: string, outcome: { decision?: Decision }, reservation?: Parameters<typeof rateLimitInfo>[2]): void {
  const info = rateLimitInfo(key, outcome.decision, reservation);
  if (info) (c as unknown as Context<RateLimitEnv>).set("rateLimit", info);
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
export function rateLimit<E extends Env = Env>(options: RateLimitOptions<E>): RateLimitMiddleware<E> {
  const plan = rateLimitPlan(options, "(c) => string");
  const { store, key: keyOf } = options;
  const log = options.log ?? defaultLog;
  const counting = countingPlan<Response, Context<E>>(options, plan, (res) => res.status, log);
  const skip = functionOption<(c: Context<E>) => boolean | Promise<boolean>>("skip", options.skip, "(c) => boolean");
  const handler = functionOption<(c: Context<E>, denial: Denial) => Response | Promise<Response>>("handler", options.handler, "(c, denial) => Response");
  /** A denial (a 429 of the engine), through `handler` when there is one. */
  const denied = async (c: Context<E>, response: Response): Promise<Response> => {
    if (!handler || response.status !== 429) return response;
    const denial = await denialOf(response);
    const answer = await handler(c, denial);
    if (!(answer instanceof Response)) throw new TypeError(`rateLimit: handler must answer a Response, got ${answer === undefined ? "undefined" : typeof answer}`);
    const own = new Response(answer.body, answer);
    for (const [name, value] of Object.entries(denial.headers)) if (!own.headers.has(name)) own.headers.set(name, value);
    return own;
  };
  const middleware: MiddlewareHandler<E> = async function spillwayRateLimit(c, next) {
    if (skip && (await skip(c))) return next();
    const key = requestKey(await keyOf(c));
    if (typeof key !== "string") return problemResponse(key);
    // The key's own namespace (apiStoreKey); overrides match the key as the function gave it.
    const storeKey = apiStoreKey(key);
    const context: LimitContext = { signal: c.req.raw.signal, label: c.req.routePath, log, defer: deferOf(c), overrideKey: key };
    let outcome: LimitOutcome;
    try {
      if (counting) return await counted(counting, c, next, storeKey, context);
      outcome = await limitRequest(store, storeKey, plan, context);
    } catch (error) {
      const failure = storeFailureProblem(error, log, c.req.routePath);
      if (failure) return problemResponse(failure);
      throw error;
    }
    if (!outcome.admitted) return denied(c, outcome.response);
    expose(c, key, outcome);
    await nextHolding(next, outcome.lease);
    withHeaders(c, outcome.headers, outcome.lease);
  };
  return Object.assign(middleware as MiddlewareHandler<E & RateLimitEnv>, { resetKey: resetKeyOf(store, plan) });

  /** A request with `count` or `cost` (counting-options.ts): checked at its cost, or peeked, then debited after the handler. */
  async function counted(counting: CountingPlan<Response, Context<E>>, c: Context<E>, next: () => Promise<void>, key: string, context: LimitContext): Promise<Response | void> {
    if (counting.estimate) return reserved(counting, counting.estimate, c, next, key, context);
    const requestCost = counting.requestCost ? checkedCost(await counting.requestCost(c), "cost.request", counting.warnings, context.label) : undefined;
    if (!counting.afterAnswer) {
      const checked = await limitRequest(store, key, plan, { ...context, cost: requestCost });
      if (!checked.admitted) return denied(c, checked.response);
      expose(c, key, checked);
      await nextHolding(next, checked.lease);
      return withHeaders(c, checked.headers, checked.lease);
    }
    const outcome = await peekRequest(store, key, plan, context);
    if (!outcome.admitted) return denied(c, outcome.response);
    expose(c, key, outcome);
    await nextHolding(next, outcome.lease);
    if (counting.counted && !counting.counted(c.res, c)) return withHeaders(c, outcome.headers, outcome.lease);
    const cost = requestCost ?? (counting.responseCost ? checkedCost(await counting.responseCost(c.res, c), "cost.response", counting.warnings, context.label) : 1);
    withHeaders(c, await outcome.settle(cost), outcome.lease);
  }

  /**
   * `estimate`: reserved before the handler; settled by the handler, or after it from
   * `cost.response`. The answer's fields show the state after the settle when one was made
   * before the answer left, else after the reservation.
   */
  async function reserved(counting: CountingPlan<Response, Context<E>>, estimateOf: (c: Context<E>) => number | Promise<number>, c: Context<E>, next: () => Promise<void>, key: string, context: LimitContext): Promise<Response | void> {
    const estimate = checkedEstimate(await estimateOf(c), plan, counting.warnings, context.label);
    const outcome = await reserveRequest(store, key, plan, context, estimate);
    if (!outcome.admitted) return denied(c, outcome.response);
    const reservation = holdReservation(outcome, estimate, counting.warnings, context);
    expose(c, context.overrideKey ?? key, outcome, reservation);
    await nextHolding(next, outcome.lease);
    if (!reservation.settling && counting.responseCost) reservation.settle(await counting.responseCost(c.res, c), "cost.response");
    withHeaders(c, reservation.settling ? await reservation.settling : outcome.headers, outcome.lease);
  }
}

/** Runs the handler; a lease is released when it throws (its answer is the app's error). */
async function nextHolding(next: () => Promise<void>, lease: HeldLease | undefined): Promise<void> {
  try {
    await next();
  } catch (error) {
    await lease?.release();
    throw error;
  }
}
