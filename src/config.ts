import { type GatewayFields, configFileSchema } from "./config-schema.js";
import { type PolicyCatalog, parsePolicyList } from "./core/policy.js";
import type { Policy } from "./core/types.js";
import { ValidationError, describeValue, parseWith } from "./core/validation.js";

/**
 * A validated `spillway.config.json` (one schema for the Worker and Node): its policies, and
 * the gateway fields when it sets an `origin` (src/gateway/config.ts builds the gateway from them).
 */
export interface SpillwayConfig {
  policies: Policy[];
  catalog: PolicyCatalog;
  /** Adds X-RateLimit-Limit/Remaining/Reset next to the RateLimit fields. */
  legacyHeaders: boolean;
  /** The gateway part, as written and shape-checked; undefined without an `origin`. */
  gateway?: GatewayFields;
}

/**
 * Validates a config object, strictly: an unknown field anywhere is an error. Errors name the
 * field (`policies.per-minute.limit: ...`, `rotues: is not a known field`).
 *
 * @example parseConfig({ policies: [{ name: "per-minute", limit: 600, period: "1m" }] })
 */
export function parseConfig(input: unknown): SpillwayConfig {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new ValidationError("config", `must be a JSON object, got ${describeValue(input)}`);
  }
  const file = parseWith(configFileSchema, input, "");
  const policies = parsePolicyList(file.policies, "policies");
  const { $schema: _schema, policies: _policies, legacyHeaders, origin, ...gatewayFields } = file;
  if (origin === undefined && file.routes !== undefined) throw new ValidationError("origin", "is required when routes are set: the URL requests are forwarded to");
  return {
    policies,
    catalog: new Map(policies.map((policy) => [policy.name, policy])),
    legacyHeaders,
    ...(origin === undefined ? {} : { gateway: { ...gatewayFields, origin } }),
  };
}

/** Parses config file text; a JSON syntax error is a ValidationError naming the file. */
export function parseConfigText(text: string, fileName: string): SpillwayConfig {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw new ValidationError(fileName, `is not valid JSON (${(error as Error).message})`);
  }
  return parseConfig(value);
}
