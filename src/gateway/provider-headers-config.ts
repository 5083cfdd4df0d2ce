import { PROVIDER_FAMILIES, PROVIDER_STYLES, type ProviderHeaders } from "../core/provider-headers.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue } from "../core/validation.js";

/**
 * A route's `providerHeaders` (docs/gateway.md, "Provider headers"): `{ "style": "openai",
 * "requests": "rpm", "tokens": "tpm" }`. Each family names a rate policy of the route; at
 * least one is named; `inputTokens` and `outputTokens` are Anthropic's alone. Errors name the
 * field: `routes.0.providerHeaders.tokens`.
 */
export function parseProviderHeaders(input: unknown, policies: readonly Policy[], field: string): ProviderHeaders {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new ValidationError(field, `must be an object like { "style": "openai", "requests": "per-minute", "tokens": "tokens-per-minute" }, got ${describeValue(input)}`);
  }
  const fields = input as Record<string, unknown>;
  for (const name of Object.keys(fields)) {
    if (name !== "style" && !(PROVIDER_FAMILIES as readonly string[]).includes(name)) throw new ValidationError(`${field}.${name}`, `is not a known field (${["style", ...PROVIDER_FAMILIES].map((one) => `"${one}"`).join(", ")})`);
  }
  const style = fields.style;
  if (typeof style !== "string" || !(PROVIDER_STYLES as readonly string[]).includes(style)) throw new ValidationError(`${field}.style`, `must be "openai" or "anthropic", got ${describeValue(style)}`);
  const rated = policies.filter((policy) => policy.algorithm !== "concurrency").map((policy) => policy.name);
  const parsed: ProviderHeaders = { style: style as ProviderHeaders["style"] };
  for (const family of PROVIDER_FAMILIES) {
    const name = fields[family];
    if (name === undefined) continue;
    if (style === "openai" && (family === "inputTokens" || family === "outputTokens")) throw new ValidationError(`${field}.${family}`, 'is Anthropic\'s (OpenAI\'s fields have "requests" and "tokens" only)');
    if (typeof name !== "string" || !rated.includes(name)) throw new ValidationError(`${field}.${family}`, `must name a rate policy of this route (${rated.join(", ")}), got ${describeValue(name)}`);
    parsed[family] = name;
  }
  if (PROVIDER_FAMILIES.every((family) => parsed[family] === undefined)) throw new ValidationError(field, 'must name the policy of at least one family of fields ("requests", "tokens"…)');
  return parsed;
}
