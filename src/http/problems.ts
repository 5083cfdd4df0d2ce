import type { Context } from "hono";
import type { ContentfulStatusCode } from "hono/utils/http-status";
import { UnknownPolicyError } from "../core/policy.js";
import type { Decision, Policy } from "../core/types.js";
import { ValidationError } from "../core/validation.js";
import { OverloadedError, StoreFaultError, StoreUnavailableError } from "../core/limiter.js";
import { defaultStoreErrorLog, errorText } from "../observe/log-lines.js";
import { OVERLOADED_TYPE, STORE_FAULT_TYPE, STORE_UNAVAILABLE_TYPE } from "../core/wire.js";


/** An RFC 9457 problem body; extra members (`field`, `violated-policies`) ride along. */
export interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
  [extension: string]: unknown;
}

const TITLES: Record<number, string> = {
  400: "Bad Request",
  401: "Unauthorized",
  404: "Not Found",
  405: "Method Not Allowed",
  413: "Content Too Large",
  429: "Too Many Requests",
  500: "Internal Server Error",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
};

export function problem(status: number, detail: string, extensions: Record<string, unknown> = {}): Problem {
  return { type: "about:blank", title: TITLES[status] ?? "Error", status, detail, ...extensions };
}

export function problemResponse(body: Problem, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status: body.status,
    headers: { "content-type": "application/problem+json", ...problemFields(body), ...headers },
  });
}

/** Retry-After of a shed 503, in seconds: long enough for a burst's queue to drain, short enough not to idle. */
export const OVERLOADED_RETRY_AFTER_S = 1;

const OVERLOADED_FIELDS: Readonly<Record<string, string>> = { "retry-after": String(OVERLOADED_RETRY_AFTER_S) };
const NO_FIELDS: Readonly<Record<string, string>> = {};

/** The fields a problem's answer carries besides content-type: Retry-After on a shed 503 (overloaded), else none. */
export function problemFields(body: Problem): Readonly<Record<string, string>> {
  return body.type === OVERLOADED_TYPE ? OVERLOADED_FIELDS : NO_FIELDS;
}

/**
 * Why a denial with `retryAfterMs: null` is final: the cost is above what a policy can ever
 * hold. Said in words because such a 429 carries no Retry-After.
 *
 * @example costAboveCapacityDetail(decision, 5) // 'the cost 5 exceeds the capacity of policy "three" (3): ...'
 */
export function costAboveCapacityDetail(decision: Decision, cost: number, policies: readonly Policy[] = []): string {
  const over = decision.policies.filter((result) => !result.allowed && result.retryAfterMs === null);
  // A credits balance is not a capacity: it is spent, and only a top-up (or its refill) raises it.
  const isCredits = (name: string) => policies.some((policy) => policy.name === name && policy.algorithm === "credits");
  const spent = over.filter((result) => isCredits(result.policy));
  if (spent.length > 0 && spent.length === over.length) {
    const named = spent.map((result) => `policy "${result.policy}" (${result.remaining} left)`).join(", ");
    return `the cost ${cost} exceeds the credits balance of ${named}: no wait helps; a top-up (POST /v1/credits) or the balance's refill does`;
  }
  const named = over.map((result) => `policy "${result.policy}" (${result.limit})`).join(", ");
  return `the cost ${cost} exceeds the capacity of ${named || `policy "${decision.policy}" (${decision.limit})`}: this request can never be admitted; retrying it will not help`;
}

/** A request body over the API's limit (413). */
export class BodyTooLargeError extends Error {
  constructor(maxBytes: number) {
    super(`the body is over ${maxBytes} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/** Maps what the service throws to a problem: a user's mistake is a 4xx, never a 500. */
export function problemFor(error: unknown): Problem {
  if (error instanceof BodyTooLargeError) return problem(413, error.message);
  if (error instanceof ValidationError) return problem(400, error.message, { field: error.field });
  if (error instanceof UnknownPolicyError) return problem(404, error.message, { field: error.field });
  if (error instanceof StoreUnavailableError) {
    return { ...problem(503, `the limiter store is unavailable and the policy fails closed: ${error.message}`), type: STORE_UNAVAILABLE_TYPE };
  }
  // Shed, never admitted (whatever the failMode): Spillway or its store is saturated.
  if (error instanceof OverloadedError) {
    return { ...problem(503, `the limiter is overloaded and shed this request; nothing was decided or admitted (${error.message}); retry after ${OVERLOADED_RETRY_AFTER_S} s`), type: OVERLOADED_TYPE };
  }
  // Never admit on a store fault, whatever the failMode; it is logged as an error.
  if (error instanceof StoreFaultError) return { ...problem(503, "the limiter store answered with an error; nothing was admitted"), type: STORE_FAULT_TYPE };
  return problem(500, "internal error");
}

/** Hono onError handler: logs only what is not the user's fault. */
export function onError(error: Error, c: Context): Response {
  const response = errorResponse(error);
  c.status(response.status as ContentfulStatusCode);
  return response;
}

/** The problem answer for an error, outside Hono (the Node gateway edge); logs as onError does. */
export function errorResponse(error: unknown): Response {
  return problemResponse(loggedProblem(error));
}

/**
 * problemFor, logged as onError logs: only what is not the user's fault. A store error is
 * expected (the store is down or refuses writes): one JSON line, rate-limited per kind, no
 * stack (defaultStoreErrorLog). Anything else is a bug, logged with its stack.
 */
export function loggedProblem(error: unknown): Problem {
  const body = problemFor(error);
  if (error instanceof StoreFaultError || error instanceof StoreUnavailableError) {
    defaultStoreErrorLog.report(error instanceof StoreFaultError ? "fault" : "unavailable", { status: body.status, error: errorText(error) });
  } else if (body.status >= 500 && body.status !== 503) console.error("spillway: internal error", error);
  // Shedding is logged where it starts and stops (once per episode), not once per request of a burst.
  else if (body.status === 503 && !(error instanceof OverloadedError)) console.warn(`spillway: ${body.detail}`);
  return body;
}
