import type { Context, Env, MiddlewareHandler } from "hono";
import { type HeldLease, deferOf, defaultLog, limitRequest, onBodyDone } from "./limit.js";
import { problemResponse } from "./problems.js";
import { type RateLimitBaseOptions, type RateLimitKey, rateLimitPlan, requestKey, storeFailureProblem } from "./rate-limit-plan.js";

export type { PolicyInput } from "./rate-limit-plan.js";

export interface RateLimitOptions<E extends Env = Env> extends RateLimitBaseOptions {
  /**
   * The key a request is counted under (an array is a composite key, joined as `a|b`). Return undefined (or "") when the request carries
   * none: it is answered 400, never counted under one empty key shared by everybody.
   */
  key: (c: Context<E>) => RateLimitKey | Promise<RateLimitKey>;
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
  const plan = rateLimitPlan(options, "(c) => string");
  const { store, key: keyOf } = options;
  const log = options.log ?? defaultLog;
  return async function spillwayRateLimit(c, next) {
    const key = requestKey(await keyOf(c));
    if (typeof key !== "string") return problemResponse(key);
    let outcome: Awaited<ReturnType<typeof limitRequest>>;
    try {
      outcome = await limitRequest(store, key, plan, { signal: c.req.raw.signal, label: c.req.routePath, log, defer: deferOf(c) });
    } catch (error) {
      const failure = storeFailureProblem(error, log, c.req.routePath);
      if (failure) return problemResponse(failure);
      throw error;
    }
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
