import type { Decision, Policy, PolicyDecision } from "./types.js";

const secondsUp = (ms: number) => Math.ceil(ms / 1000);

/**
 * RateLimit-Policy, RateLimit and Retry-After (draft-ietf-httpapi-ratelimit-headers),
 * one list item per policy. `t` is the policy's retryAfterMs when it denied, else its resetMs,
 * in whole seconds rounded up. Retry-After (denials only) is never earlier than any denied `t`.
 *
 * @example rateLimitHeaders(decision, policies, { legacy: false })["RateLimit"] // '"per-minute";r=0;t=1'
 */
export function rateLimitHeaders(decision: Decision, policies: readonly Policy[], options: { legacy?: boolean } = {}): Record<string, string> {
  const byName = new Map(policies.map((policy) => [policy.name, policy]));
  const policyItems: string[] = [];
  const stateItems: string[] = [];
  for (const result of decision.policies) {
    const policy = byName.get(result.policy);
    policyItems.push(policyItem(result, policy));
    stateItems.push(`${quote(result.policy)};r=${result.remaining};t=${secondsUp(resetOrRetryMs(result))}`);
  }
  const headers: Record<string, string> = {
    "RateLimit-Policy": policyItems.join(", "),
    RateLimit: stateItems.join(", "),
  };
  if (!decision.allowed) {
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
 * Seconds for Retry-After: at least 1, never before any denied policy's `t`. A request that
 * can never be admitted (cost above capacity) gets the longest reset as a conservative hint.
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

function policyItem(result: PolicyDecision, policy: Policy | undefined): string {
  if (policy?.algorithm === "concurrency") return `${quote(result.policy)};q=${result.limit};qu="concurrent-requests"`;
  // The quota is `limit` per `period` (a gcra/token-bucket burst lets more through at once).
  const quota = policy ? policy.limit : result.limit;
  const windowSeconds = policy ? secondsUp(policy.periodMs) : 0;
  return `${quote(result.policy)};q=${quota};w=${windowSeconds}`;
}

/** A structured-field string: policy names match [a-z0-9._-], so only quoting is needed. */
function quote(name: string): string {
  return `"${name.replace(/["\\]/g, "\\$&")}"`;
}
