import { ValidationError } from "../../core/validation.js";
import { goDurationMs } from "../args/go-duration.js";
import { RLS_ENV_ROWS } from "./env-table.js";
import { type XdsSettings, parseXdsEnv } from "./xds-env.js";

/** `spillway rls`'s settings, read from envoyproxy/ratelimit's variables (env-table.ts lists every one). */
export interface RlsEnvSettings {
  grpc: { host: string; port: number; uds?: string; maxConnectionAgeMs: number; maxConnectionAgeGraceMs: number; tls?: { certPath: string; keyPath: string; clientCaPath?: string } };
  http: { host: string; port: number };
  log: { level: LogLevel; format: "text" | "json" };
  runtime: { root: string; subdirectory: string; appDirectory: string; ignoreDotFiles: boolean; watchRoot: boolean };
  redis: RlsRedisSettings;
  stats: { enabled: boolean; nearLimitRatio: number; prometheus?: { host: string; port: number; path: string; mapperYamlPath?: string } };
  responseHeaders?: { limit: string; remaining: string; reset: string };
  healthyWithAtLeastOneConfig: boolean;
  shadowMode: boolean;
  quotaMode: boolean;
  dynamicMetadata: boolean;
  /** CONFIG_TYPE=GRPC_XDS_SOTW: the config comes from an xDS server, not the runtime directory (xds-env.ts). */
  xds?: XdsSettings;
}

export interface RlsRedisSettings {
  type: "single" | "cluster" | "sentinel";
  /** single: a unix socket path or host:port; cluster: seed nodes; sentinel: the master's name and the Sentinels. */
  socketPath?: string;
  nodes: { host: string; port: number }[];
  sentinelName?: string;
  username?: string;
  password?: string;
  sentinelPassword?: string;
  tls?: { caPath?: string; certPath?: string; keyPath?: string; skipHostnameVerification: boolean };
  keyPrefix?: string;
  /** REDIS_TIMEOUT: the store's per-call timeout (unset: the store's default). */
  timeoutMs?: number;
}

export type LogLevel = "debug" | "info" | "warn" | "error";
const LOG_LEVELS: Record<string, LogLevel> = { trace: "debug", debug: "debug", info: "info", warn: "warn", warning: "warn", error: "error", fatal: "error", panic: "error" };

/**
 * Reads the reference's environment. A variable that asks for what Spillway does not do is a
 * ValidationError naming it (exit 2 before anything starts); `ignored` names the set variables
 * that do not apply here, for one startup line. Values are read as the reference's envconfig
 * reads them: booleans as Go's strconv.ParseBool, durations as Go's time.ParseDuration.
 */
export function parseRlsEnv(env: Record<string, string | undefined>): { settings: RlsEnvSettings; ignored: string[] } {
  const ignored: string[] = [];
  for (const row of RLS_ENV_ROWS) {
    const value = env[row.name];
    if (value === undefined) continue;
    if (row.kind === "refused" && row.refuses(value.trim())) throw new ValidationError(row.name, `${JSON.stringify(value)} is not supported by spillway rls: ${row.why}`);
    // An ignored switch set to false asks for nothing: no line for it.
    if (row.kind === "ignored" && value !== "" && !FALSE.has(value)) ignored.push(row.name);
  }
  const text = (name: string, fallback: string) => env[name] ?? fallback;
  const flag = (name: string, fallback: boolean) => parseBool(name, env[name], fallback);
  const int = (name: string, fallback: number, min: number, max: number) => parseInteger(name, env[name], fallback, min, max);
  const duration = (name: string, fallbackMs: number) => (env[name] === undefined || env[name] === "" ? fallbackMs : parseGoDurationMs(name, env[name]!));

  const level = LOG_LEVELS[text("LOG_LEVEL", "warn").toLowerCase()];
  if (!level) throw new ValidationError("LOG_LEVEL", `must be one of debug, info, warn, error (or trace, warning, fatal, panic), got ${JSON.stringify(env.LOG_LEVEL)}`);
  const format = text("LOG_FORMAT", "text").toLowerCase();
  if (format !== "text" && format !== "json") throw new ValidationError("LOG_FORMAT", `must be text or json, got ${JSON.stringify(env.LOG_FORMAT)}`);

  const grpc: RlsEnvSettings["grpc"] = {
    host: text("GRPC_HOST", "0.0.0.0"),
    port: int("GRPC_PORT", 8081, 0, 65535),
    maxConnectionAgeMs: duration("GRPC_MAX_CONNECTION_AGE", 24 * 3_600_000),
    maxConnectionAgeGraceMs: duration("GRPC_MAX_CONNECTION_AGE_GRACE", 3_600_000),
  };
  if (env.GRPC_UDS) grpc.uds = env.GRPC_UDS;
  if (flag("GRPC_SERVER_USE_TLS", false)) {
    const certPath = env.GRPC_SERVER_TLS_CERT;
    const keyPath = env.GRPC_SERVER_TLS_KEY;
    if (!certPath) throw new ValidationError("GRPC_SERVER_TLS_CERT", "is required with GRPC_SERVER_USE_TLS=true: the PEM certificate chain");
    if (!keyPath) throw new ValidationError("GRPC_SERVER_TLS_KEY", "is required with GRPC_SERVER_USE_TLS=true: the PEM private key");
    grpc.tls = { certPath, keyPath, ...(env.GRPC_CLIENT_TLS_CACERT ? { clientCaPath: env.GRPC_CLIENT_TLS_CACERT } : {}) };
  }

  const stats: RlsEnvSettings["stats"] = { enabled: !flag("DISABLE_STATS", false), nearLimitRatio: parseRatio(env.NEAR_LIMIT_RATIO) };
  if (flag("USE_PROMETHEUS", false)) {
    stats.prometheus = { ...parseAddress("PROMETHEUS_ADDR", text("PROMETHEUS_ADDR", ":9090")), path: parsePath(text("PROMETHEUS_PATH", "/metrics")) };
    // Read at startup (command.ts, mapper.ts): a statsd_exporter mapping of the reference's stat names.
    if (env.PROMETHEUS_MAPPER_YAML) stats.prometheus.mapperYamlPath = env.PROMETHEUS_MAPPER_YAML;
  }

  const settings: RlsEnvSettings = {
    grpc,
    http: { host: text("HOST", "0.0.0.0"), port: int("PORT", 8080, 0, 65535) },
    log: { level, format },
    runtime: {
      root: text("RUNTIME_ROOT", "/srv/runtime_data/current"),
      subdirectory: text("RUNTIME_SUBDIRECTORY", ""),
      appDirectory: text("RUNTIME_APPDIRECTORY", "config"),
      ignoreDotFiles: flag("RUNTIME_IGNOREDOTFILES", false),
      watchRoot: flag("RUNTIME_WATCH_ROOT", true),
    },
    redis: parseRedis(env, flag, duration),
    stats,
    healthyWithAtLeastOneConfig: flag("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", false),
    shadowMode: flag("SHADOW_MODE", false),
    quotaMode: flag("QUOTA_MODE", false),
    dynamicMetadata: flag("RESPONSE_DYNAMIC_METADATA", false),
  };
  const xds = parseXdsEnv(env, flag, duration);
  if (xds) settings.xds = xds;
  if (flag("LIMIT_RESPONSE_HEADERS_ENABLED", false)) {
    settings.responseHeaders = { limit: headerName("LIMIT_LIMIT_HEADER", text("LIMIT_LIMIT_HEADER", "RateLimit-Limit")), remaining: headerName("LIMIT_REMAINING_HEADER", text("LIMIT_REMAINING_HEADER", "RateLimit-Remaining")), reset: headerName("LIMIT_RESET_HEADER", text("LIMIT_RESET_HEADER", "RateLimit-Reset")) };
  }
  return { settings, ignored };
}

function parseRedis(env: Record<string, string | undefined>, flag: (name: string, fallback: boolean) => boolean, duration: (name: string, fallbackMs: number) => number): RlsRedisSettings {
  const type = (env.REDIS_TYPE ?? "single").toLowerCase();
  if (type !== "single" && type !== "cluster" && type !== "sentinel") throw new ValidationError("REDIS_TYPE", `must be single, cluster or sentinel, got ${JSON.stringify(env.REDIS_TYPE)}`);
  const socketType = (env.REDIS_SOCKET_TYPE ?? "unix").toLowerCase();
  if (socketType !== "unix" && socketType !== "tcp") throw new ValidationError("REDIS_SOCKET_TYPE", `must be unix or tcp, got ${JSON.stringify(env.REDIS_SOCKET_TYPE)}`);
  const url = env.REDIS_URL ?? "/var/run/nutcracker/ratelimit.sock";
  const redis: RlsRedisSettings = { type, nodes: [] };
  const parts = url.split(",").map((part) => part.trim());
  if (type === "single" && socketType === "unix") {
    if (url === "" || url.includes(",")) throw new ValidationError("REDIS_URL", `must be a unix socket path with REDIS_SOCKET_TYPE=unix (the default), got ${JSON.stringify(url)}`);
    // `spillway serve` reads REDIS_URL as redis://host:port; here, as the reference does, it is a
    // socket path unless REDIS_SOCKET_TYPE=tcp. An address taken for a path would only fail to connect (ENOENT), again and again.
    const address = tcpAddressIn(url);
    if (address !== undefined) {
      const extra = [/^rediss:/i.test(url) ? "REDIS_TLS=true" : "", /\/\/[^/@]*@/.test(url) ? "its password in REDIS_AUTH" : ""].filter(Boolean);
      throw new ValidationError("REDIS_URL", `${JSON.stringify(redacted(url))} is a TCP address, but REDIS_SOCKET_TYPE is unix (the reference's default), which reads REDIS_URL as a socket path: set REDIS_SOCKET_TYPE=tcp and REDIS_URL=${address} (host:port, as the reference reads it)${extra.length > 0 ? `, with ${extra.join(" and ")}` : ""}`);
    }
    redis.socketPath = url;
  } else if (type === "single") {
    redis.nodes = [hostPort("REDIS_URL", url)];
  } else if (type === "cluster") {
    redis.nodes = parts.map((part) => hostPort("REDIS_URL", part));
  } else {
    if (parts.length < 2 || parts[0] === "") throw new ValidationError("REDIS_URL", `must be <master name>,<sentinel host:port>,... with REDIS_TYPE=sentinel, got ${JSON.stringify(url)}`);
    redis.sentinelName = parts[0];
    redis.nodes = parts.slice(1).map((part) => hostPort("REDIS_URL", part));
  }
  // The reference's REDIS_AUTH: "password", or "user:password" for an ACL user.
  const auth = env.REDIS_AUTH ?? "";
  if (auth !== "") {
    const colon = auth.indexOf(":");
    if (colon >= 0) {
      redis.username = auth.slice(0, colon);
      redis.password = auth.slice(colon + 1);
    } else redis.password = auth;
  }
  if (env.REDIS_SENTINEL_AUTH) redis.sentinelPassword = env.REDIS_SENTINEL_AUTH;
  if (flag("REDIS_TLS", false)) {
    redis.tls = { skipHostnameVerification: flag("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", false) };
    if (env.REDIS_TLS_CACERT) redis.tls.caPath = env.REDIS_TLS_CACERT;
    if ((env.REDIS_TLS_CLIENT_CERT ? 1 : 0) !== (env.REDIS_TLS_CLIENT_KEY ? 1 : 0)) throw new ValidationError(env.REDIS_TLS_CLIENT_CERT ? "REDIS_TLS_CLIENT_KEY" : "REDIS_TLS_CLIENT_CERT", "is required: a client certificate needs both REDIS_TLS_CLIENT_CERT and REDIS_TLS_CLIENT_KEY");
    if (env.REDIS_TLS_CLIENT_CERT) redis.tls.certPath = env.REDIS_TLS_CLIENT_CERT;
    if (env.REDIS_TLS_CLIENT_KEY) redis.tls.keyPath = env.REDIS_TLS_CLIENT_KEY;
  }
  if (env.REDIS_TIMEOUT) {
    const timeoutMs = duration("REDIS_TIMEOUT", 0);
    if (timeoutMs < 1) throw new ValidationError("REDIS_TIMEOUT", `must be at least 1ms, got ${JSON.stringify(env.REDIS_TIMEOUT)}`);
    redis.timeoutMs = timeoutMs;
  }
  const prefix = env.CACHE_KEY_PREFIX;
  if (prefix !== undefined && prefix !== "") {
    if (/[{}]/.test(prefix)) throw new ValidationError("CACHE_KEY_PREFIX", `must not contain braces (Spillway's keys carry a Redis Cluster hash tag), got ${JSON.stringify(prefix)}`);
    redis.keyPrefix = prefix;
  }
  return redis;
}

/**
 * The host:port that REDIS_URL names when it is no socket path: a URL (`redis://h:6379`, its
 * host:port; 6379 when it gives none), or `host:port` with no slash. Undefined for a path.
 */
function tcpAddressIn(url: string): string | undefined {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(url);
  if (scheme) {
    try {
      const parsed = new URL(url);
      return parsed.hostname ? `${parsed.hostname}:${parsed.port || "6379"}` : "127.0.0.1:6379";
    } catch {
      return "127.0.0.1:6379";
    }
  }
  return /^(\[[^\]]+\]|[^/:\s]+):\d{1,5}$/.test(url) ? url : undefined;
}

/** A URL's credentials out of an error message. */
const redacted = (url: string) => url.replace(/\/\/[^/@]*@/, "//…@");

function hostPort(name: string, text: string, lowestPort = 1): { host: string; port: number } {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(text);
  if (!match && text.includes("://")) throw new ValidationError(name, `must be host:port (as the reference reads it), not a URL: ${tcpAddressIn(text)}, got ${JSON.stringify(redacted(text))}`);
  if (!match || Number(match[2]) > 65535 || Number(match[2]) < lowestPort) throw new ValidationError(name, `must be host:port (as the reference reads it), got ${JSON.stringify(text)}`);
  return { host: match[1]!.replace(/^\[|\]$/g, ""), port: Number(match[2]) };
}

/** A listen address as Go writes it: `:9090` (every interface), `host:9090`. */
function parseAddress(name: string, text: string): { host: string; port: number } {
  if (text.startsWith(":")) return { host: "0.0.0.0", port: parseInteger(name, text.slice(1), 0, 0, 65535) };
  return hostPort(name, text, 0);
}

function parsePath(path: string): string {
  if (!path.startsWith("/") || /\s/.test(path)) throw new ValidationError("PROMETHEUS_PATH", `must be a path starting with /, got ${JSON.stringify(path)}`);
  return path;
}

function headerName(name: string, value: string): string {
  if (!/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(value)) throw new ValidationError(name, `must be an HTTP header name, got ${JSON.stringify(value)}`);
  return value;
}

function parseRatio(text: string | undefined): number {
  if (text === undefined || text === "") return 0.8;
  const ratio = Number(text);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1 || text.trim() === "") throw new ValidationError("NEAR_LIMIT_RATIO", `must be a number from 0 to 1, got ${JSON.stringify(text)}`);
  return ratio;
}

const TRUE = new Set(["1", "t", "T", "TRUE", "true", "True"]);
const FALSE = new Set(["0", "f", "F", "FALSE", "false", "False"]);

/** Go's strconv.ParseBool, which the reference's envconfig uses: an empty value is the default. */
export function parseBool(name: string, text: string | undefined, fallback: boolean): boolean {
  if (text === undefined || text === "") return fallback;
  if (TRUE.has(text)) return true;
  if (FALSE.has(text)) return false;
  throw new ValidationError(name, `must be true or false, got ${JSON.stringify(text)}`);
}

function parseInteger(name: string, text: string | undefined, fallback: number, min: number, max: number): number {
  if (text === undefined || text === "") return fallback;
  const number = Number(text);
  if (!/^\d+$/.test(text) || number < min || number > max) throw new ValidationError(name, `must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
  return number;
}

/** Go's time.ParseDuration (`24h`, `1h30m`, `250ms`, `0`), in whole milliseconds. */
export function parseGoDurationMs(name: string, text: string): number {
  const ms = goDurationMs(text);
  if (ms === undefined) throw new ValidationError(name, `must be a Go duration such as 30s, 24h or 1h30m, got ${JSON.stringify(text)}`);
  return Math.round(ms);
}
