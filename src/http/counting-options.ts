import { concurrencyPolicies } from "../core/concurrency.js";
import { describeValue } from "../core/validation.js";
import { DEFAULT_MISSING_COST, MAX_COST, STATUS_LIST_FORM, UsageWarnings, parseStatusList, reportedCost, statusMatches } from "./counting.js";
import type { LimitPlan, LogFn } from "./limit.js";

/**
 * rateLimit()'s `count` and `cost` options (docs/counting.md), runtime-neutral: `Res` and `Req`
 * are the runtime's response and request (Hono: Response and Context; Node: ServerResponse
 * and IncomingMessage). Validated when the middleware is built.
 */

/** A status class: every status from 100 × n to 100 × n + 99. */
export type StatusClass = "1xx" | "2xx" | "3xx" | "4xx" | "5xx";

/**
 * Which answers are counted: statuses (`[401, 403, "5xx"]`), or a function of the response.
 * With `count`, a request is peeked before your handler runs (refused only when not even one
 * unit is left) and debited after it, when its answer is counted.
 */
export type CountOption<Res, Req> = readonly (number | StatusClass)[] | ((response: Res, request: Req) => boolean);

/**
 * What a request costs: a constant (0 … 1e9), `{ request }` (decided before your handler runs,
 * checked at that cost), or `{ response }` (read from the answer and debited after it, past the
 * limit if need be). A function's result that is not an integer from 0 to 1e9 counts 1, logged.
 */
export type CostOption<Res, Req> =
  | number
  | { request: (request: Req) => number | Promise<number> }
  | { response: (response: Res, request: Req) => number | Promise<number> };

/**
 * Reserve, then settle: what a request is expected to cost, known before your handler runs (a
 * constant, or a function of the request: an LLM call's `max_tokens` plus its prompt's size).
 */
export type EstimateOption<Req> = number | ((request: Req) => number | Promise<number>);

/** The options, validated: what each request does. */
export interface CountingPlan<Res, Req> {
  /** Reserve this before the handler, settle after (`estimate`). */
  estimate?: (request: Req) => number | Promise<number>;
  /** Undefined: every answer counts (with a response cost). */
  counted?: (response: Res, request: Req) => boolean;
  requestCost?: (request: Req) => number | Promise<number>;
  responseCost?: (response: Res, request: Req) => number | Promise<number>;
  /** Peek before, debit after: `count` is set or the cost comes from the response. */
  afterAnswer: boolean;
  /** A cost function's unusable answers, logged once a minute. */
  warnings: UsageWarnings;
}

function fail(option: string, message: string): never {
  throw new TypeError(`rateLimit: ${option} ${message}`);
}

const COST_FORM = "an integer from 0 to 1000000000, { request: (req) => number } or { response: (res, req) => number }";

/** Validates `count` and `cost` (undefined when neither is set); `statusOf` reads the runtime's response status. */
export function countingPlan<Res, Req>(options: { count?: unknown; cost?: unknown; estimate?: unknown }, plan: LimitPlan, statusOf: (response: Res) => number, log: LogFn): CountingPlan<Res, Req> | undefined {
  const { count, cost, estimate } = options;
  if (count === undefined && cost === undefined && estimate === undefined) return undefined;
  const result: CountingPlan<Res, Req> = { afterAnswer: false, warnings: new UsageWarnings(log) };
  if (estimate !== undefined) return estimatePlan(result, options, plan);
  if (typeof count === "function") result.counted = count as (response: Res, request: Req) => boolean;
  else if (count !== undefined) {
    const parsed = parseStatusList(count);
    if ("error" in parsed) fail(parsed.index === undefined ? "count" : `count.${parsed.index}`, `${parsed.error} (count is ${STATUS_LIST_FORM}, or a function (res, req) => boolean)`);
    result.counted = (response) => statusMatches(parsed, statusOf(response));
  }
  if (typeof cost === "number") {
    if (!Number.isInteger(cost) || cost < 0 || cost > MAX_COST) fail("cost", `must be ${COST_FORM}, got ${describeValue(cost)}`);
    result.requestCost = () => cost;
  } else if (cost !== undefined) {
    const fields = cost !== null && typeof cost === "object" ? Object.keys(cost) : [];
    if (fields.length !== 1 || (fields[0] !== "request" && fields[0] !== "response")) fail("cost", `must be ${COST_FORM}, got ${describeValue(cost)}`);
    const fn = (cost as Record<string, unknown>)[fields[0]!];
    if (typeof fn !== "function") fail(`cost.${fields[0]}`, `must be a function, got ${describeValue(fn)}`);
    if (fields[0] === "request") result.requestCost = fn as CountingPlan<Res, Req>["requestCost"];
    else result.responseCost = fn as CountingPlan<Res, Req>["responseCost"];
  }
  result.afterAnswer = result.counted !== undefined || result.responseCost !== undefined;
  if (result.afterAnswer) {
    const option = count !== undefined ? "count" : "cost";
    if (plan.onLimit === "delay") fail("onLimit", `must be "reject" with ${option}: a request cannot wait for a slot whose cost is not known yet`);
    if (concurrencyPolicies(plan.policies).length === plan.policies.length) fail(option, "counts nothing: the policies are all concurrency policies, which hold leases rather than count");
  }
  return result;
}

/**
 * A cost a function answered, checked by the rule of every reported cost (reportedCost): a
 * whole number, clamped to 1e9; anything else 1, logged once a minute per option (as
 * `usage-unusable`); never a throw: the request or its answer has gone its way.
 */
export function checkedCost(value: unknown, option: "cost.request" | "cost.response", warnings: UsageWarnings, label: string): number {
  const { cost, usable } = reportedCost(value, { missing: DEFAULT_MISSING_COST });
  if (!usable) warnings.warn(option, { route: label, option, value: describeValue(value), cost });
  return cost;
}

/**
 * `estimate` (reserve, then settle): a constant or a function; with it `cost` may only be
 * `{ response }` (what settles it when your handler does not), and `count` is left out (a
 * reservation is settled with what was used, 0 included, not counted or not).
 */
function estimatePlan<Res, Req>(result: CountingPlan<Res, Req>, options: { count?: unknown; cost?: unknown; estimate?: unknown }, plan: LimitPlan): CountingPlan<Res, Req> {
  const { estimate, count, cost } = options;
  if (typeof estimate === "number") {
    if (!Number.isInteger(estimate) || estimate < 0 || estimate > MAX_COST) fail("estimate", `must be an integer from 0 to ${MAX_COST} or a function (req) => number, got ${describeValue(estimate)}`);
    result.estimate = () => estimate;
  } else if (typeof estimate === "function") result.estimate = estimate as CountingPlan<Res, Req>["estimate"];
  else fail("estimate", `must be an integer from 0 to ${MAX_COST} or a function (req) => number, got ${describeValue(estimate)}`);
  if (count !== undefined) fail("count", "does not go with estimate: a reservation is settled with what the request used (0 when nothing), counted or not");
  if (cost !== undefined) {
    const fn = cost !== null && typeof cost === "object" && Object.keys(cost).length === 1 ? (cost as { response?: unknown }).response : undefined;
    if (typeof fn !== "function") fail("cost", `must be { response: (res, req) => number } with estimate (what settles the reservation when your handler does not), got ${describeValue(cost)}`);
    result.responseCost = fn as CountingPlan<Res, Req>["responseCost"];
  }
  if (plan.onLimit === "delay") fail("onLimit", 'must be "reject" with estimate: a reservation is taken now or refused');
  if (concurrencyPolicies(plan.policies).length === plan.policies.length) fail("estimate", "reserves nothing: the policies are all concurrency policies, which hold leases rather than count");
  result.afterAnswer = true;
  return result;
}

/**
 * An estimate a function answered, by the rule of every reported cost (reportedCost); one that
 * is unusable (absent, negative, fractional) reserves the stack's capacity, the least burst of
 * its rate policies, logged: an estimate nobody could read never reserves less than any could.
 */
export function checkedEstimate(value: unknown, plan: LimitPlan, warnings: UsageWarnings, label: string): number {
  const capacity = Math.min(...plan.policies.filter((policy) => policy.algorithm !== "concurrency").map((policy) => policy.burst));
  const { cost, usable } = reportedCost(value, { missing: Math.min(capacity, MAX_COST) });
  if (!usable) warnings.warn("estimate", { route: label, option: "estimate", value: describeValue(value), cost });
  return cost;
}
