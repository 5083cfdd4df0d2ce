import { advertisedQuota, quotaItem, rateLimitHeaders, retryAfterSeconds } from "./headers.js";
import { type ProviderHeaders, providerFields } from "./provider-headers.js";
import type { Decision, Policy } from "./types.js";

/**
 * Which rate-limit fields an answer carries (`rateLimit({ headers })`):
 * - `draft-10` (the default): `RateLimit-Policy` and `RateLimit`, one item per policy
 *   (draft-ietf-httpapi-ratelimit-headers-10, what `spillway serve` and the gateway send).
 *   -11 (May 2026) kept every field of -10 (`q`, `qu`, `w`, `pk`; `r`, `t`, `pk`): it is this style too.
 * - `draft-7`: one combined `RateLimit: limit=5, remaining=4, reset=60` and `RateLimit-Policy: 5;w=60` (-07).
 * - `draft-6`: `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset` and `RateLimit-Policy` (-06).
 * - `legacy`: `X-RateLimit-Limit`, `X-RateLimit-Remaining`, `X-RateLimit-Reset` only.
 * The older drafts and legacy describe one policy: the most restrictive of a stack (the
 * decision's top level). Resets are delta seconds, rounded up. Denials carry `Retry-After` in
 * every style.
 */
export type HeaderStyle = "draft-10" | "draft-7" | "draft-6" | "legacy";

export const HEADER_STYLES: readonly HeaderStyle[] = ["draft-10", "draft-7", "draft-6", "legacy"];

const secondsUp = (ms: number) => Math.ceil(ms / 1000);

/**
 * The fields of `style` for a decision; `legacy: true` adds the X-RateLimit-* fields to a draft
 * style; `provider` adds a provider's own fields and `retry-after-ms` (provider-headers.ts).
 */
export function styledHeaders(decision: Decision, policies: readonly Policy[], options: { style?: HeaderStyle; legacy?: boolean; provider?: ProviderHeaders }): Record<string, string> {
  const headers = ietfHeaders(decision, policies, options);
  return options.provider ? Object.assign(headers, providerFields(decision, options.provider)) : headers;
}

function ietfHeaders(decision: Decision, policies: readonly Policy[], options: { style?: HeaderStyle; legacy?: boolean }): Record<string, string> {
  const style = options.style ?? "draft-10";
  if (style === "draft-10") return rateLimitHeaders(decision, policies, { legacy: options.legacy });
  const limit = decision.limit;
  const remaining = decision.remaining;
  const reset = secondsUp(decision.allowed ? decision.resetMs : (decision.retryAfterMs ?? decision.resetMs));
  const headers: Record<string, string> = {};
  if (style === "legacy" || options.legacy) {
    headers["X-RateLimit-Limit"] = String(limit);
    headers["X-RateLimit-Remaining"] = String(remaining);
    headers["X-RateLimit-Reset"] = String(reset);
  }
  if (style === "draft-7") {
    headers["RateLimit-Policy"] = policyField(decision, policies);
    headers.RateLimit = `limit=${limit}, remaining=${remaining}, reset=${reset}`;
  } else if (style === "draft-6") {
    headers["RateLimit-Policy"] = policyField(decision, policies);
    headers["RateLimit-Limit"] = String(limit);
    headers["RateLimit-Remaining"] = String(remaining);
    headers["RateLimit-Reset"] = String(reset);
  }
  if (!decision.allowed && decision.retryAfterMs !== null) headers["Retry-After"] = String(retryAfterSeconds(decision));
  return headers;
}

/** `5;w=60`: the quota of the decision's policy and its window, as draft-6/7 write it (no name; the capacity `limit` counts against, as draft-10's item). */
function policyField(decision: Decision, policies: readonly Policy[]): string {
  const policy = policies.find((candidate) => candidate.name === decision.policy);
  if (!policy || policy.algorithm === "concurrency") return String(decision.limit);
  const [quota, windowMs] = advertisedQuota(policy);
  return quotaItem(quota, windowMs).slice("q=".length);
}
