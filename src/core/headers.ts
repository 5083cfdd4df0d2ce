import type { Decision, Policy, PolicyDecision } from "./types.js";

const secondsUp = (ms: number) => Math.ceil(ms / 1000);

/**
 * RateLimit-Policy, RateLimit and Retry-After (draft-ietf-httpapi-ratelimit-headers),
 * one list item per policy. `t` is the policy's retryAfterMs when it denied, else its resetMs,
 * in whole seconds rounded up. Retry-After (denials only) is never earlier than any denied `t`.
 * A request that can never be admitted (cost above capacity: `retryAfterMs` null) gets no
 * Retry-After: any value would tell a client that honours it to retry for ever.
 *
 * @example rateLimitHeaders(decision, policies, { legacy: false })["RateLimit"] // '"per-minute";r=0;t=1'
 */
export function rateLimitHeaders(decision: Decision, policies: readonly Policy[], options: { legacy?: boolean } = {}): Record<string, string> {
  // Built by concatenation, without a Map or arrays: this runs for every limited request.
  let policyField = "";
  let stateField = "";
  for (let i = 0; i < decision.policies.length; i++) {
    const result = decision.policies[i]!;
    const separator = i === 0 ? "" : ", ";
    const name = quote(result.policy);
    policyField += separator + policyItem(name, result, policyNamed(policies, result.policy));
    stateField += `${separator}${name};r=${result.remaining};t=${secondsUp(resetOrRetryMs(result))}`;
  }
  const headers: Record<string, string> = {
    "RateLimit-Policy": policyField,
    RateLimit: stateField,
  };
  if (!decision.allowed && decision.retryAfterMs !== null) {
    headers["Retry-After"] = String(retryAfterSeconds(decision));
  }
  if (options.legacy) {
    headers["X-RateLimit-Limit"] = String(decision.limit);
    headers["X-RateLimit-Remaining"] = String(decision.remaining);
    headers["X-RateLimit-Reset"] = String(secondsUp(decision.allowed ? decision.resetMs : (decision.retryAfterMs ?? decision.resetMs)));
  }
  return headers;
}

/**
 * Seconds for Retry-After: at least 1, never before any denied policy's `t`. rateLimitHeaders
 * sends none for a request that can never be admitted; asked anyway, this answers the
 * longest reset.
 */
export function retryAfterSeconds(decision: Decision): number {
  let seconds = decision.retryAfterMs === null ? secondsUp(decision.resetMs) : secondsUp(decision.retryAfterMs);
  for (const result of decision.policies) {
    if (!result.allowed) seconds = Math.max(seconds, secondsUp(resetOrRetryMs(result)));
  }
  return Math.max(1, seconds);
}

function resetOrRetryMs(result: PolicyDecision): number {
  if (result.allowed) return result.resetMs;
  return result.retryAfterMs ?? result.resetMs;
}

/** The last policy of that name, as a Map built from the list would hold (a stack is a handful of policies: a scan beats building one). */
function policyNamed(policies: readonly Policy[], name: string): Policy | undefined {
  for (let i = policies.length - 1; i >= 0; i--) if (policies[i]!.name === name) return policies[i];
  return undefined;
}

function policyItem(quotedName: string, result: PolicyDecision, policy: Policy | undefined): string {
  if (policy?.algorithm === "concurrency") return `${quotedName};q=${result.limit};qu="concurrent-requests"`;
  // The quota is `limit` per `period` (a gcra/token-bucket burst lets more through at once).
  const quota = policy ? policy.limit : result.limit;
  const windowSeconds = policy ? secondsUp(policy.periodMs) : 0;
  return `${quotedName};q=${quota};w=${windowSeconds}`;
}

/** A structured-field string: policy names match [a-z0-9._-], so only quoting is needed. */
function quote(name: string): string {
  if (!name.includes('"') && !name.includes("\\")) return `"${name}"`;
  return `"${name.replace(/["\\]/g, "\\$&")}"`;
}
