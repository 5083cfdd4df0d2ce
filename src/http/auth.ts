import type { MiddlewareHandler } from "hono";
import { type Problem, problem, problemResponse } from "./problems.js";

/**
 * Compares two secrets in time that depends only on their lengths, so an attacker cannot
 * learn a token byte by byte from response times. Compared by UTF-16 unit: equal units are
 * equal UTF-8 bytes, with no encoding per request.
 */
export function constantTimeEqual(given: string, expected: string): boolean {
  let difference = given.length ^ expected.length;
  const span = Math.max(1, given.length);
  for (let i = 0; i < expected.length; i++) difference |= (given.charCodeAt(i % span) | 0) ^ expected.charCodeAt(i);
  return difference === 0;
}

/** Why a request may not use the API, with the headers of that answer. */
export interface AuthRefusal {
  problem: Problem;
  headers: Record<string, string>;
}

/**
 * Bearer-token auth for /v1, runtime-neutral: undefined when `authorization` (the header,
 * repeated ones joined by ", ") carries the `expected` token. With no token configured the API
 * is closed (503 saying how to set one): an open decision API would let anyone reset anyone's limits.
 */
export function authRefusal(expected: string | undefined, authorization: string | undefined): AuthRefusal | undefined {
  if (!expected) {
    return { problem: problem(503, "no API token is configured: set SPILLWAY_TOKEN (`wrangler secret put SPILLWAY_TOKEN`, or in the environment for `spillway serve`)"), headers: {} };
  }
  const match = /^Bearer\s+(.+)$/i.exec(authorization ?? "");
  if (!match || !constantTimeEqual(match[1]!.trim(), expected)) {
    return { problem: problem(401, "missing or wrong bearer token in the Authorization header"), headers: { "www-authenticate": 'Bearer realm="spillway"' } };
  }
  return undefined;
}

/** authRefusal as Hono middleware. */
export function bearerAuth(tokenOf: (c: Parameters<MiddlewareHandler>[0]) => string | undefined): MiddlewareHandler {
  return async function spillwayBearerAuth(c, next) {
    const refusal = authRefusal(tokenOf(c), c.req.header("authorization"));
    if (refusal) return problemResponse(refusal.problem, refusal.headers);
    await next();
  };
}
