import * as z from "zod/mini";
import { describe } from "./core/duration.js";
import { type PolicyCatalog, parsePolicyList } from "./core/policy.js";
import type { Policy } from "./core/types.js";
import { ValidationError, parseWith } from "./core/validation.js";

/**
 * A validated `spillway.config.json` (one schema for the Worker and Node). Gateway fields
 * (`origin`, `routes`, ...) are validated by the gateway module and kept here as-is.
 */
export interface SpillwayConfig {
  policies: Policy[];
  catalog: PolicyCatalog;
  /** Adds X-RateLimit-Limit/Remaining/Reset next to the RateLimit fields. */
  legacyHeaders: boolean;
  /** The raw config, for the gateway's own validation. */
  raw: Record<string, unknown>;
}

const topLevel = z.looseObject({
  legacyHeaders: z._default(z.boolean({ error: "must be true or false" }), false),
});

/**
 * Validates a config object. Errors name the field (`policies.per-minute.limit: ...`).
 *
 * @example parseConfig({ policies: [{ name: "per-minute", limit: 600, period: "1m" }] })
 */
export function parseConfig(input: unknown): SpillwayConfig {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new ValidationError("config", `must be a JSON object, got ${describe(input)}`);
  }
  const raw = input as Record<string, unknown>;
  const { legacyHeaders } = parseWith(topLevel, raw, "");
  const policies = raw.policies === undefined ? [] : parsePolicyList(raw.policies, "policies");
  return { policies, catalog: new Map(policies.map((policy) => [policy.name, policy])), legacyHeaders, raw };
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
