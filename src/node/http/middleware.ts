import { apiStoreKey } from "../../overrides/key-source.js";
import type { IncomingMessage, ServerResponse } from "node:http";
import { concurrencyPolicies } from "../../core/concurrency.js";
import { type CountOption, type CostOption, type CountingPlan, type EstimateOption, checkedCost, checkedEstimate, countingPlan } from "../../http/counting-options.js";
import { type CountedOutcome, peekRequest } from "../../http/count-limit.js";
import { reserveRequest } from "../../http/count-reserve.js";
import { type HeldReservation, holdReservation } from "../../http/reservation.js";
import { type LimitContext, type LimitOutcome, type LogFn, defaultLog, limitRequest } from "../../http/limit.js";
import { type Problem, problemFields } from "../../http/problems.js";
import { spelled } from "./header-names.js";
import type { Limiter } from "../../core/limiter.js";
import type { LimitPlan } from "../../http/limit.js";
import { type RateLimitBaseOptions, type RateLimitInfo, type RateLimitKey, rateLimitInfo, rateLimitPlan, requestKey, resetKeyOf, storeFailureProblem } from "../../http/rate-limit-plan.js";
import { type Denial, denialOf, functionOption } from "../../http/middleware-options.js";

export interface NodeRateLimitOptions<Req extends IncomingMessage = IncomingMessage> extends RateLimitBaseOptions {
  /**
   * The key a request is counted under (an array is a composite key, joined as `a|b`); may be async. Return undefined (or "") when the
   * request carries none: it is answered 400, never counted under one empty key shared by everybody.
   */
  key: (req: Req) => RateLimitKey | Promise<RateLimitKey>;
  /**
   * Count only some answers: statuses (`[401, 403]`, `"5xx"`) or `(res, req) => boolean`. The
   * request is peeked before your handler (refused only when nothing is left) and its cost
   * debited once the response has been sent, when it counts. Your handler writes the head, so
   * its RateLimit fields show the state before the debit. Requests in flight together may run
   * a key up to (their number − 1) past its limit.
   * @default every request counts, before your handler runs
   */
  count?: CountOption<ServerResponse, Req>;
  /**
   * What a request costs: a constant, `{ request: (req) => number }` (checked before your
   * handler at that cost) or `{ response: (res, req) => number }` (asked once the response has
   * been sent, e.g. from `res.locals`, and debited).
   * @default 1
   */
  cost?: CostOption<ServerResponse, Req>;
  /**
   * Reserve, then settle (docs/counting.md): what a request is expected to cost, a constant or
   * `(req) => number` read before your handler runs (an LLM call's `max_tokens` plus its
   * prompt, from `req.body`). It is checked and consumed like a cost, all-or-nothing over the
   * policies: a request whose reservation does not fit is answered 429 before your handler
   * runs. Your handler then settles what it used, once: `await req.rateLimit?.settle(used)`
   * (unused units go back, an excess is charged), or `cost: { response }` settles once the
   * response has been sent, when the handler did not. Never settled (the handler threw, or had
   * no usage): the reservation stands. An estimate that is not a whole number reserves the
   * policies' least burst, logged.
   */
  estimate?: EstimateOption<Req>;
  /**
   * Requests for which it answers true pass unlimited: not counted, no rate-limit fields
   * (health checks, an allow list). May be async.
   */
  skip?: (req: Req, res: ServerResponse) => boolean | Promise<boolean>;
  /**
   * Answers a denial your way instead of the 429 problem: the rate-limit fields and
   * Retry-After are already set on `res`; `denial` holds Spillway's answer (its status, fields
   * and problem body). End the response; what it throws goes to `next(error)`.
   * @example handler: (req, res, denial) => res.status(429).json({ error: "slow down" })
   */
  handler?: (req: Req, res: ServerResponse, denial: Denial) => void | Promise<void>;
}

/** `next` as Express passes it, or your own callback on plain node:http: `next(error)` on an error, `next()` to go on. */
export type NextFunction = (error?: unknown) => void;

/** A connect-style middleware. Its promise never rejects: errors go to `next(error)`. */
export type NodeMiddleware<Req extends IncomingMessage = IncomingMessage> = (req: Req, res: ServerResponse, next: NextFunction) => Promise<void>;

/** The middleware `rateLimit()` returns: a NodeMiddleware, and `resetKey`. */
export interface NodeRateLimitMiddleware<Req extends IncomingMessage = IncomingMessage> extends NodeMiddleware<Req> {
  /**
   * Forgets the middleware's counts for `key` (what the key function answers) under each of its
   * policies, in its store: a fresh budget, e.g. after a successful login.
   * @example await limiter.resetKey(req.body.username)
   */
  resetKey(key: RateLimitKey): Promise<void>;
}

declare module "http" {
  interface IncomingMessage {
    /**
     * Set by spillway/node's `rateLimit()` on a request it let through, before your handler
     * runs: the decision (`limit`, `remaining`, `resetMs`, each of `policies`) and the key.
     */
    rateLimit?: RateLimitInfo;
  }
}

function send(res: ServerResponse, status: number, headers: Record<string, string> | Headers, body: string | null): void {
  res.statusCode = status;
  if (headers instanceof Headers) headers.forEach((value, name) => res.setHeader(spelled(name), value));
  else for (const name in headers) res.setHeader(name, headers[name]!);
  res.end(body ?? undefined);
}

function sendProblem(res: ServerResponse, body: Problem): void {
  send(res, body.status, { "content-type": "application/problem+json", ...problemFields(body) }, JSON.stringify(body));
}

/** A denial built by the shared engine (a web Response: the 429 problem) written to Node's response. */
async function sendDenial(res: ServerResponse, response: Response): Promise<void> {
  // 499: the client left while its request was delayed; there is nobody to answer.
  if (response.status === 499) return;
  send(res, response.status, response.headers, await response.text());
}

/** Aborted when the response closes: finished, or the client went away. */
function closeSignal(res: ServerResponse): AbortSignal {
  const closing = new AbortController();
  // The client may have gone while the key function ran: 'close' is then behind us.
  if (res.closed) closing.abort();
  else res.once("close", () => closing.abort());
  return closing.signal;
}

/**
 * Rate limiting for Express and plain node:http: a `(req, res, next)` middleware with the
 * options of spillway/hono's `rateLimit()`. Admitted requests get the RateLimit fields and go
 * on with `next()`; denied ones get 429 with Retry-After, the RateLimit fields and a
 * quota-exceeded problem body. Concurrency policies hold a lease until the response closes
 * (finished, or the client went away), released once. When the store cannot decide and the
 * policies fail closed (or the store faults), the answer is the 503 problem of `spillway serve`;
 * an error thrown by your key function goes to `next(error)`.
 * Bad options throw a TypeError naming the option when the middleware is built.
 *
 * @example
 * import express, { type Request } from "express";
 * import { MemoryStore, rateLimit } from "spillway/node";
 *
 * const app = express();
 * app.use("/api", rateLimit({
 *   store: new MemoryStore(),
 *   policies: { name: "per-minute", algorithm: "gcra", limit: 60, period: "1m" },
 *   key: (req: Request) => req.get("x-api-key"),
 * }));
 *
 * @example
 * // Plain node:http: next is your own callback.
 * const limit = rateLimit({ store, policies, key: (req) => req.socket.remoteAddress });
 * http.createServer((req, res) => limit(req, res, (error) => (error ? fail(res, error) : handle(req, res))));
 */
export function rateLimit<Req extends IncomingMessage = IncomingMessage>(options: NodeRateLimitOptions<Req>): NodeRateLimitMiddleware<Req> {
  const plan = rateLimitPlan(options, "(req) => string");
  const { store, key: keyOf } = options;
  const log = options.log ?? defaultLog;
  const counting = countingPlan<ServerResponse, Req>(options, plan, (res) => res.statusCode, log);
  // Only plans that can wait or hold a lease need to know when the response closes.
  const watchesClose = plan.onLimit === "delay" || concurrencyPolicies(plan.policies).length > 0;
  const skip = functionOption<(req: Req, res: ServerResponse) => boolean | Promise<boolean>>("skip", options.skip, "(req, res) => boolean");
  const handler = functionOption<(req: Req, res: ServerResponse, denial: Denial) => void | Promise<void>>("handler", options.handler, "(req, res, denial) => void");
  /** A denial (the engine's 429) written to `res`, through `handler` when there is one. */
  const deny = async (req: Req, res: ServerResponse, response: Response): Promise<void> => {
    if (!handler || response.status !== 429) return sendDenial(res, response);
    const denial = await denialOf(response);
    for (const name in denial.headers) res.setHeader(spelled(name), denial.headers[name]!);
    res.statusCode = denial.status;
    await handler(req, res, denial);
  };
  const limit = (req: Req, key: string, context: LimitContext) => (counting ? countedLimit(counting, store, plan, req, key, context) : limitRequest(store, key, plan, context));
  const middleware: NodeMiddleware<Req> = async function spillwayRateLimit(req, res, next) {
    // The path (Express's whole one, not the part below the mount point), without a query
    // string that may carry secrets, names the request in logs.
    const label = ((req as { originalUrl?: string }).originalUrl ?? req.url ?? "").split("?", 1)[0]!;
    try {
      if (skip && (await skip(req, res))) return next();
      const key = requestKey(await keyOf(req));
      if (typeof key !== "string") return sendProblem(res, key);
      const signal = watchesClose ? closeSignal(res) : undefined;
      // The key's own namespace (apiStoreKey); overrides match the key as the function gave it.
      const outcome = await limit(req, apiStoreKey(key), { signal, label, log, overrideKey: key });
      if (!outcome.admitted) return await deny(req, res, outcome.response);
      const reservation = (outcome as Partial<Reserved>).reservation;
      const info = rateLimitInfo(key, outcome.decision, reservation);
      if (info) req.rateLimit = info;
      for (const name in outcome.headers) res.setHeader(name, outcome.headers[name]!);
      if (reservation) settleReservationOnClose(counting!, reservation, req, res, log, label);
      else if (counting && isSettled(outcome)) settleOnClose(counting, outcome, req, res, log, label);
      const lease = outcome.lease;
      if (lease && signal) {
        if (signal.aborted) void lease.release();
        else signal.addEventListener("abort", () => void lease.release(), { once: true });
      }
    } catch (error) {
      const failure = storeFailureProblem(error, log, label);
      return failure ? sendProblem(res, failure) : next(error);
    }
    next();
  };
  return Object.assign(middleware, { resetKey: resetKeyOf(store, plan) });
}

const isSettled = (outcome: LimitOutcome | CountedOutcome): outcome is CountedOutcome & { admitted: true } => outcome.admitted && "settle" in outcome;

/** A request with `count` or `cost` (counting-options.ts): checked at a request's cost, or peeked. */
async function countedLimit<Req>(counting: CountingPlan<ServerResponse, Req>, store: Limiter, plan: LimitPlan, req: Req, key: string, context: LimitContext): Promise<LimitOutcome | CountedOutcome | Reserved> {
  if (counting.estimate) {
    const estimate = checkedEstimate(await counting.estimate(req), plan, counting.warnings, context.label);
    const outcome = await reserveRequest(store, key, plan, context, estimate);
    return outcome.admitted ? { ...outcome, reservation: holdReservation(outcome, estimate, counting.warnings, context) } : outcome;
  }
  const requestCost = counting.requestCost ? checkedCost(await counting.requestCost(req), "cost.request", counting.warnings, context.label) : undefined;
  if (!counting.afterAnswer) return limitRequest(store, key, plan, { ...context, cost: requestCost });
  const outcome = await peekRequest(store, key, plan, context);
  if (outcome.admitted && requestCost !== undefined) {
    const { settle } = outcome;
    // The request's cost, debited when its answer counts.
    return { ...outcome, settle: () => settle(requestCost) };
  }
  return outcome;
}

/** A reservation taken (`estimate`): the handler settles it, or `cost.response` once the response is sent. */
type Reserved = CountedOutcome & { admitted: true; reservation: HeldReservation };

/**
 * `cost.response` settles a reservation the handler left unsettled, once the response has been
 * sent (as settleOnClose debits a counted one). Without it, an unsettled reservation stands.
 */
function settleReservationOnClose<Req>(counting: CountingPlan<ServerResponse, Req>, reservation: HeldReservation, req: Req, res: ServerResponse, log: LogFn, label: string): void {
  const responseCost = counting.responseCost;
  if (!responseCost) return;
  res.once("close", () => {
    if (reservation.settling) return;
    void Promise.resolve()
      .then(() => responseCost(res, req))
      .then(
        (cost) => {
          // The handler may have settled while the cost was read: its settle stands.
          if (!reservation.settling) void reservation.settle(cost, "cost.response");
        },
        (error: unknown) => log({ event: "count-failed", route: label, error: String(error) }),
      );
  });
}

/**
 * How long a handler may go on answering after its client left, and still be counted: an LLM
 * call that outlives its client is work done (and billed to you), so its cost is charged.
 */
export const LATE_ANSWER_MS = 120_000;

/**
 * Debits a counted request once its response has gone out, your handler having written its
 * head: the first moment its status and cost are known. A client that leaves before the
 * handler answers does not skip the charge: the handler usually goes on (its call to an
 * upstream is under way) and ends the response into the closed socket; that end is counted
 * (within LATE_ANSWER_MS). A handler that never answers was not given: nothing is counted.
 */
function settleOnClose<Req>(counting: CountingPlan<ServerResponse, Req>, outcome: CountedOutcome & { admitted: true }, req: Req, res: ServerResponse, log: LogFn, label: string): void {
  const settle = () => {
    // Your functions run after the response, outside any handler: what they throw is logged, not thrown.
    void Promise.resolve()
      .then(() => {
        if (counting.counted && !counting.counted(res, req)) return undefined;
        return counting.responseCost ? counting.responseCost(res, req) : 1;
      })
      .then(
        (cost) => (cost === undefined ? undefined : outcome.settle(checkedCost(cost, "cost.response", counting.warnings, label))),
        (error: unknown) => log({ event: "count-failed", route: label, error: String(error) }),
      );
  };
  res.once("close", () => {
    if (res.headersSent) return settle();
    // The client left first: count the answer the handler still gives.
    const end = res.end;
    const giveUp = setTimeout(() => {
      res.end = end;
    }, LATE_ANSWER_MS);
    giveUp.unref();
    res.end = function lateEnd(this: ServerResponse, ...args: unknown[]) {
      clearTimeout(giveUp);
      res.end = end;
      const result = (end as (...rest: unknown[]) => ServerResponse).apply(this, args);
      settle();
      return result;
    } as ServerResponse["end"];
  });
}
