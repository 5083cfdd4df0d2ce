// config: the whole config file, parsed once and strictly, and its schema (schema.ts).
import { type DurableObjectPlacement, type GatewayFields, configFileSchema } from "./schema.js";
import { POLICY_NAME_PATTERN, type PolicyCatalog, parsePolicyList } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue, parseWith } from "../core/validation.js";
import { type Override, parseOverrideList } from "../overrides/parse.js";
import { type NotifyConfig, parseNotify } from "../notify/config.js";
import { findDuplicateKey } from "../core/json-duplicates.js";

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
  /** Per-key limits of the config (docs/overrides.md); runtime ones live in the store. */
  overrides: Override[];
  /** How long each process or isolate uses a read of the runtime overrides (the rollout bound). */
  overridesTtlMs: number;
  /** Every gateway route in dry-run (also SPILLWAY_DRY_RUN=1, see withDryRunEnv). */
  dryRun: boolean;
  /** The Worker only: the location hint and jurisdiction of every Durable Object it opens ({}: Cloudflare's choice). */
  durableObjects: DurableObjectPlacement;
  /** Webhooks for `warning` (past a policy's warnAt) and `exhausted` (its first denial), once per window. */
  notify?: NotifyConfig;
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
  const { $schema: _schema, policies: _policies, legacyHeaders, origin, overrides, overridesTtl, dryRun, notify, durableObjects, ...gatewayFields } = file;
  if (origin === undefined && file.routes !== undefined) throw new ValidationError("origin", "is required when routes are set: the URL requests are forwarded to");
  const catalog = new Map(policies.map((policy) => [policy.name, policy]));
  return {
    policies,
    catalog,
    legacyHeaders,
    ...(origin === undefined ? {} : { gateway: { ...gatewayFields, origin } }),
    overrides: parseOverrideList(overrides, catalog),
    overridesTtlMs: overridesTtl,
    dryRun,
    durableObjects,
    ...(notify ? { notify: parseNotify(notify) } : {}),
  };
}

/**
 * The config with `SPILLWAY_DRY_RUN` applied (Node's environment, a Worker's var): "1" or
 * "true" puts every route in dry-run; "", "0" or "false" leaves the config's `dryRun`.
 * Anything else is an error naming the variable, never a silent default.
 */
export function withDryRunEnv(config: SpillwayConfig, value: string | undefined): SpillwayConfig {
  if (value === undefined || value === "" || value === "0" || value === "false") return config;
  if (value === "1" || value === "true") return config.dryRun ? config : { ...config, dryRun: true };
  throw new ValidationError("SPILLWAY_DRY_RUN", `must be "1" or "true" (every route in dry-run), or "0", "false" or empty, got ${describeValue(value)}`);
}

/**
 * Parses config file text, the one way every config file is read (`spillway serve`, `check`,
 * the build of an `init` project): a UTF-8 byte order mark is skipped, a JSON syntax error is
 * a ValidationError naming the file, and a field written twice in one object is refused by
 * name (`policies.per-minute.limit: appears twice`): JSON.parse would keep the last one.
 */
export function parseConfigText(text: string, fileName: string): SpillwayConfig {
  // Editors on Windows write a BOM; it is no part of the JSON (and invisible in an error).
  const json = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    // The config is JSON on purpose: the Worker imports the same file as a module (wrangler bundles
    // JSON as it is), and the JSON Schema checks it in an editor; YAML is for --rls-config only.
    const reason = (error as Error).message.replace(/\s+/g, " ");
    if (/\.ya?ml$/i.test(fileName)) throw new ValidationError(fileName, `is not JSON, and --config takes JSON only (spillway.config.json: the one file the Worker and Node both read); YAML is for --rls-config, envoyproxy/ratelimit's files (${reason})`);
    throw new ValidationError(fileName, `is not valid JSON (${(error as Error).message})`);
  }
  const duplicate = findDuplicateKey(json);
  if (duplicate) throw new ValidationError(fieldOf(duplicate, value), "appears twice: set each field once (JSON keeps the last one silently)");
  return parseConfig(value);
}

/** A path as config errors spell it: a policy by its name when it has a valid one (`policies.per-minute.limit`). */
function fieldOf(path: readonly (string | number)[], config: unknown): string {
  const parts = path.map(String);
  if (path[0] === "policies" && typeof path[1] === "number") {
    const policies = (config as { policies?: unknown }).policies;
    const name = Array.isArray(policies) ? (policies[path[1]] as { name?: unknown } | null)?.name : undefined;
    if (typeof name === "string" && POLICY_NAME_PATTERN.test(name)) parts[1] = name;
  }
  return parts.join(".");
}
