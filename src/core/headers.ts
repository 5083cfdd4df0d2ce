import type { Decision, Policy, PolicyDecision } from "./types.js";

const secondsUp = (ms: number) => Math.ceil(ms / 1000);

/**
 * The largest integer a structured field may carry (RFC 8941 §3.3.1: at most 15 digits). A money
 * budget's limit or balance may be 1e15 (MAX_BUDGET_LIMIT, MAX_BALANCE), one past it: `q` and `r`
 * say 999999999999999 then, one microdollar short, rather than send a field a parser refuses.
 */
export const MAX_SF_INTEGER = 999_999_999_999_999;
const sfInteger = (value: number) => (value > MAX_SF_INTEGER ? MAX_SF_INTEGER : value);

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
    stateField += `${separator}${name};r=${sfInteger(result.remaining)};t=${secondsUp(resetOrRetryMs(result))}`;
  }
  const headers: Record<string, string> = {
    "RateLimit-Policy": policyField,
    RateLimit: stateField,
  };
  if (!decision.allowed && decision.retryAfterMs !== null) {
    headers["Retry-After"] = String(retryAfterSeconds(decision));
  }
  if (decision.warning) headers[WARNING_HEADER] = warningField(decision);
  if (options.legacy) {
    headers["X-RateLimit-Limit"] = String(decision.limit);
    headers["X-RateLimit-Remaining"] = String(decision.remaining);
    headers["X-RateLimit-Reset"] = String(secondsUp(decision.allowed ? decision.resetMs : (decision.retryAfterMs ?? decision.resetMs)));
  }
  return headers;
}

/**
 * The near-limit signal (policy `warnAt`): the policies that warn, a structured-field list of
 * their names in stack order (`"monthly", "daily"`). Spillway's own header: the RateLimit draft
 * has no field for it.
 */
export const WARNING_HEADER = "Spillway-Warning";

function warningField(decision: Decision): string {
  let field = "";
  for (const result of decision.policies) if (result.warning) field += (field ? ", " : "") + quote(result.policy);
  return field;
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
  // Without its policy the period is unknown: the quota alone, never a made-up window.
  if (!policy) return `${quotedName};q=${sfInteger(result.limit)}`;
  // A calendar window has no fixed length (a month is 28 to 31 days, a day 23 to 25 hours in a
  // zone that changes its offset), and a balance has no window at all: the quota alone, as for
  // any window that no whole number of seconds states exactly (SPEC §4). `t` still runs to the boundary.
  if (policy.calendar || policy.algorithm === "credits") return `${quotedName};q=${sfInteger(policy.limit)}`;
  const [quota, windowMs] = advertisedQuota(policy);
  return `${quotedName};${quotaItem(quota, windowMs)}`;
}

/**
 * The quota and window `RateLimit-Policy` states for a policy: the same capacity the decision's
 * `limit` and `RateLimit`'s `r` count against, refilled at the policy's rate. For most policies
 * that is `limit` per `period`. gcra's capacity is its `burst`, refilled at `limit` per
 * `period`: `burst` per `burst × period / limit` (6000/min with burst 600 is 600 per 6 s, not
 * 6000 per 60 s beside an `r` that counts down from 600), when that is whole milliseconds
 * (else the rate alone, `limit` per `period`). A token bucket holding less than `limit`
 * admits at most its `burst` per `period`: it refills once a period, up to `burst`.
 *
 * @example advertisedQuota({ algorithm: "gcra", limit: 6000, burst: 600, periodMs: 60_000 }) // [600, 6000]
 */
export function advertisedQuota(policy: Pick<Policy, "algorithm" | "limit" | "burst" | "periodMs">): [quota: number, windowMs: number] {
  const { limit, burst, periodMs } = policy;
  if (burst === limit) return [limit, periodMs];
  if (policy.algorithm === "gcra") {
    const refillMs = (burst * periodMs) / limit;
    return Number.isSafeInteger(refillMs) ? [burst, refillMs] : [limit, periodMs];
  }
  if (policy.algorithm === "token-bucket" && burst < limit) return [burst, periodMs];
  return [limit, periodMs];
}

/** The longest window `w` may name: the longest period, 366 d, in seconds. */
const MAX_WINDOW_SECONDS = 366 * 86_400;

/**
 * `q=…;w=…` for `limit` per `periodMs`, exact (SPEC §4). `w` is whole seconds, so a period
 * that is not is advertised over the smallest whole-second window holding whole periods,
 * with the quota scaled to it: that window is lcm(period, 1000 ms), i.e. period / gcd(period,
 * 1000) seconds, holding 1000 / gcd periods. 10 per 250 ms: gcd 250, so w=1 and q=40 (not
 * q=10;w=1, which would under-state what it admits fourfold); 5 per 1500 ms: w=3, q=10. When
 * that window is longer than 366 d, or its quota longer than 15 digits, `w` is left out rather
 * than rounded. What quota and period
 * a policy states: advertisedQuota.
 *
 * @example quotaItem(10, 250) // "q=40;w=1"
 */
export function quotaItem(limit: number, periodMs: number): string {
  if (periodMs % 1000 === 0) return `q=${sfInteger(limit)};w=${periodMs / 1000}`;
  const divisor = gcd(periodMs, 1000);
  const windowSeconds = periodMs / divisor;
  const scaled = limit * (1000 / divisor);
  // A budget's limit scaled past 15 digits (5e13 per 1 ms) is no field's integer: no window either.
  if (windowSeconds > MAX_WINDOW_SECONDS || scaled > MAX_SF_INTEGER) return `q=${sfInteger(limit)}`;
  return `q=${scaled};w=${windowSeconds}`;
}

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

/** A structured-field string: policy names match [a-z0-9._-], so only quoting is needed. */
function quote(name: string): string {
  if (!name.includes('"') && !name.includes("\\")) return `"${name}"`;
  return `"${name.replace(/["\\]/g, "\\$&")}"`;
}
