import { ValidationError } from "../../core/validation.js";

/** `spillway serve --redis-sentinel …`: a master found through its sentinels (src/stores/redis/sentinel.ts). */
export interface SentinelChoice {
  kind: "redis-sentinel";
  sentinels: { host: string; port: number }[];
  /** The master's name as the sentinels know it. */
  name: string;
  /** The master's (and replicas') password. */
  password?: string;
  /** The sentinels' own password. */
  sentinelPassword?: string;
  /** TLS to the sentinels and to the master. */
  tls?: boolean;
}

/** The flags, for node:util parseArgs. */
export const SENTINEL_FLAG_OPTIONS = {
  "redis-sentinel": { type: "string" },
  "redis-sentinel-name": { type: "string" },
  "redis-sentinel-password": { type: "string" },
  "redis-password": { type: "string" },
  "redis-sentinel-tls": { type: "boolean" },
} as const;

export const SENTINEL_USAGE = `  --redis-sentinel ADDRS  comma-separated HOST:PORT of Redis Sentinels (default: $REDIS_SENTINELS);
                         the store follows the master they name through failovers
  --redis-sentinel-name NAME  the master's name in sentinel.conf (default: $REDIS_SENTINEL_NAME)
  --redis-password PASS  the master's password, with --redis-sentinel (default: $REDIS_PASSWORD)
  --redis-sentinel-password PASS  the sentinels' own password (default: $REDIS_SENTINEL_PASSWORD)
  --redis-sentinel-tls   TLS to the sentinels and the master (or REDIS_SENTINEL_TLS=true)`;

export interface SentinelFlagValues {
  "redis-sentinel"?: string;
  "redis-sentinel-name"?: string;
  "redis-sentinel-password"?: string;
  "redis-password"?: string;
  "redis-sentinel-tls"?: boolean;
}

/**
 * A comma-separated list of sentinel addresses, `HOST:PORT,HOST:PORT` (IPv6 as `[::1]:26379`).
 * Throws a ValidationError naming `field` (a flag or an environment variable) for an empty
 * list, an address without a port, a bad port or an address listed twice.
 *
 * @example parseSentinelList("10.0.0.1:26379,10.0.0.2:26379", "--redis-sentinel")
 * // [{ host: "10.0.0.1", port: 26379 }, { host: "10.0.0.2", port: 26379 }]
 */
export function parseSentinelList(text: string, field: string): { host: string; port: number }[] {
  const entries = text.split(",").map((entry) => entry.trim());
  if (entries.every((entry) => entry === "")) throw new ValidationError(field, "must list at least one sentinel as HOST:PORT (10.0.0.1:26379,10.0.0.2:26379)");
  const seen = new Set<string>();
  return entries
    .filter((entry) => entry !== "")
    .map((entry) => {
      if (/^[a-z][a-z0-9+.-]*:\/\//i.test(entry)) throw urlGiven(entry, field);
      const match = /^(?:\[([^\]]+)\]|([^:[\]]+)):(.*)$/.exec(entry);
      if (!match) throw new ValidationError(field, `${JSON.stringify(entry)} has no port: write HOST:PORT (Sentinel's usual port is 26379: ${entry.includes(":") && !entry.startsWith("[") ? `[${entry}]:26379` : `${entry}:26379`})`);
      const host = (match[1] ?? match[2])!;
      const portText = match[3]!;
      const port = Number(portText);
      if (!/^\d+$/.test(portText) || port < 1 || port > 65535) throw new ValidationError(field, `${JSON.stringify(entry)}: the port must be an integer from 1 to 65535, got ${JSON.stringify(portText)}`);
      const key = `${host}:${port}`;
      if (seen.has(key)) throw new ValidationError(field, `${JSON.stringify(entry)} is listed twice`);
      seen.add(key);
      return { host, port };
    });
}

/**
 * A sentinel written as a URL (`redis://10.0.0.1:26379`, as --redis takes): say what to write
 * instead. The URL's user and password are never repeated (they would land in logs).
 */
function urlGiven(entry: string, field: string): ValidationError {
  let hostPort = "10.0.0.1:26379";
  let shown = entry.replace(/\/\/[^@/]*@/, "//…@");
  try {
    const url = new URL(entry);
    hostPort = `${url.hostname}:${url.port || "26379"}`;
    shown = `${url.protocol}//${url.username || url.password ? "…@" : ""}${url.host}${url.pathname === "/" ? "" : url.pathname}`;
  } catch {
    // Not even a URL: the example stands.
  }
  const secrets = " (a password goes in --redis-password and --redis-sentinel-password, TLS is --redis-sentinel-tls)";
  return new ValidationError(field, `lists sentinels as HOST:PORT, not a URL: write ${hostPort} for ${JSON.stringify(shown)}${secrets}`);
}

/**
 * The Sentinel store from flags, else the environment; undefined when neither names
 * sentinels. A flag of the family without sentinels is a mistake, named.
 */
export function parseSentinelChoice(values: SentinelFlagValues, env: Record<string, string | undefined>, flagsOnly: boolean): SentinelChoice | undefined {
  const fromFlag = values["redis-sentinel"];
  const listText = fromFlag ?? (flagsOnly ? undefined : env.REDIS_SENTINELS);
  if (listText === undefined) {
    const stray = (["redis-sentinel-name", "redis-sentinel-password", "redis-password", "redis-sentinel-tls"] as const).find((flag) => values[flag] !== undefined);
    if (stray) throw new ValidationError(`--${stray}`, "applies only with --redis-sentinel (or REDIS_SENTINELS)");
    return undefined;
  }
  const sentinels = parseSentinelList(listText, fromFlag !== undefined ? "--redis-sentinel" : "REDIS_SENTINELS");
  const nameField = values["redis-sentinel-name"] !== undefined ? "--redis-sentinel-name" : "REDIS_SENTINEL_NAME";
  const name = values["redis-sentinel-name"] ?? env.REDIS_SENTINEL_NAME;
  if (name === undefined || name.trim() === "") throw new ValidationError("--redis-sentinel-name", "is required with --redis-sentinel: the master's name in sentinel.conf (sentinel monitor NAME host port quorum), or set REDIS_SENTINEL_NAME");
  if (!/^\S+$/.test(name)) throw new ValidationError(nameField, `must be one word (the master's name in sentinel.conf), got ${JSON.stringify(name)}`);
  const password = nonEmpty(values["redis-password"], "--redis-password") ?? nonEmpty(env.REDIS_PASSWORD, "REDIS_PASSWORD");
  const sentinelPassword = nonEmpty(values["redis-sentinel-password"], "--redis-sentinel-password") ?? nonEmpty(env.REDIS_SENTINEL_PASSWORD, "REDIS_SENTINEL_PASSWORD");
  const tls = values["redis-sentinel-tls"] ?? parseBooleanEnv(env.REDIS_SENTINEL_TLS, "REDIS_SENTINEL_TLS");
  return { kind: "redis-sentinel", sentinels, name, ...(password ? { password } : {}), ...(sentinelPassword ? { sentinelPassword } : {}), ...(tls ? { tls } : {}) };
}

function nonEmpty(value: string | undefined, field: string): string | undefined {
  if (value === undefined) return undefined;
  if (value === "") throw new ValidationError(field, "is empty: give the password, or leave it out");
  return value;
}

function parseBooleanEnv(value: string | undefined, field: string): boolean | undefined {
  if (value === undefined || value === "") return undefined;
  if (/^(true|1|yes)$/i.test(value)) return true;
  if (/^(false|0|no)$/i.test(value)) return false;
  throw new ValidationError(field, `must be true or false, got ${JSON.stringify(value)}`);
}
