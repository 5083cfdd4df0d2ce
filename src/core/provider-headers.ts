import type { Decision, PolicyDecision } from "./types.js";

/**
 * The rate-limit fields the providers' own SDKs and clients read (docs/gateway.md, "Provider
 * headers"), opt-in per gateway route beside the IETF fields: which policy each family of
 * fields reports is the route's to say (`requests`: the requests-a-minute policy, `tokens`:
 * the tokens one, and for Anthropic `inputTokens` and `outputTokens`).
 *
 * - `openai`: `x-ratelimit-limit-requests`, `x-ratelimit-remaining-requests`,
 *   `x-ratelimit-reset-requests`, and the same for `-tokens`; a reset is the time until the
 *   policy is back to full, written as OpenAI does (Go's duration form: `6m0s`, `1s`, `20ms`).
 * - `anthropic`: `anthropic-ratelimit-requests-limit`, `-remaining`, `-reset`, and the same for
 *   `tokens`, `input-tokens`, `output-tokens`; a reset is the time the policy is back to full,
 *   in RFC 3339 (UTC, whole seconds, rounded up).
 * Every denial also carries `retry-after-ms` (the exact wait, which the official OpenAI and
 * Anthropic SDKs prefer to `Retry-After`'s whole seconds).
 */
export interface ProviderHeaders {
  style: "openai" | "anthropic";
  requests?: string;
  tokens?: string;
  /** Anthropic only. */
  inputTokens?: string;
  outputTokens?: string;
}

export const PROVIDER_STYLES = ["openai", "anthropic"] as const;
export const PROVIDER_FAMILIES = ["requests", "tokens", "inputTokens", "outputTokens"] as const;
export type ProviderFamily = (typeof PROVIDER_FAMILIES)[number];

const ANTHROPIC_NAMES: Record<ProviderFamily, string> = { requests: "requests", tokens: "tokens", inputTokens: "input-tokens", outputTokens: "output-tokens" };

/**
 * A time in Go's `time.Duration` form, as OpenAI writes its resets: `20ms` under a second,
 * else hours, minutes and seconds with the leading zero units left out (`6m0s`, `1h0m0s`,
 * `1.5s`).
 *
 * @example goDuration(360_000) // "6m0s"
 */
export function goDuration(ms: number): string {
  const whole = Math.max(0, Math.ceil(ms));
  if (whole === 0) return "0s";
  if (whole < 1000) return `${whole}ms`;
  const hours = Math.floor(whole / 3_600_000);
  const minutes = Math.floor((whole % 3_600_000) / 60_000);
  const seconds = String((whole % 60_000) / 1000);
  return `${hours > 0 ? `${hours}h` : ""}${hours > 0 || minutes > 0 ? `${minutes}m` : ""}${seconds}s`;
}

/** `nowMs + ms` in RFC 3339, UTC, rounded up to the second: `2026-12-07T01:20:00Z`. */
export function rfc3339After(nowMs: number, ms: number): string {
  return new Date(Math.ceil((nowMs + Math.max(0, ms)) / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** The exact wait of a denial: the longest of its denied policies' (never before Retry-After's own `t`); undefined when it can never pass. */
export function retryAfterMsOf(decision: Decision): number | undefined {
  if (decision.allowed || decision.retryAfterMs === null) return undefined;
  let ms = decision.retryAfterMs;
  for (const result of decision.policies) if (!result.allowed && result.retryAfterMs !== null) ms = Math.max(ms, result.retryAfterMs);
  return Math.max(1, Math.ceil(ms));
}

/** The provider's fields for the families whose policy this decision holds (a stack decided in parts holds some of them). */
export function providerFields(decision: Decision, provider: ProviderHeaders, nowMs = Date.now()): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const family of PROVIDER_FAMILIES) {
    const name = provider[family];
    if (name === undefined) continue;
    const result = findPolicy(decision.policies, name);
    if (!result) continue;
    if (provider.style === "openai") {
      const suffix = family === "requests" ? "requests" : "tokens";
      headers[`x-ratelimit-limit-${suffix}`] = String(result.limit);
      headers[`x-ratelimit-remaining-${suffix}`] = String(result.remaining);
      headers[`x-ratelimit-reset-${suffix}`] = goDuration(result.resetMs);
    } else {
      const prefix = `anthropic-ratelimit-${ANTHROPIC_NAMES[family]}`;
      headers[`${prefix}-limit`] = String(result.limit);
      headers[`${prefix}-remaining`] = String(result.remaining);
      headers[`${prefix}-reset`] = rfc3339After(nowMs, result.resetMs);
    }
  }
  const retryMs = retryAfterMsOf(decision);
  if (retryMs !== undefined) headers["retry-after-ms"] = String(retryMs);
  return headers;
}

function findPolicy(results: readonly PolicyDecision[], name: string): PolicyDecision | undefined {
  for (const result of results) if (result.policy === name) return result;
  return undefined;
}
