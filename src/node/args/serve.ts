// node/args: the command line's flags and values parsed into typed arguments (serve, Sentinel,
// RLS, Go durations), below every other room of node/ so each may read them.
import { validateRedisUrl } from "../../stores/redis/connection-errors.js";
import { availableParallelism } from "node:os";
import { parseArgs } from "node:util";
import { ValidationError } from "../../core/validation.js";
import { DEFAULT_MEMORY_MAX_KEYS } from "../../stores/memory.js";
import { DEFAULT_MAX_IN_FLIGHT } from "../../stores/call-queue.js";
import { DEFAULT_TIMEOUT_MS } from "../../stores/redis/options.js";
import { goDurationMs } from "./go-duration.js";
import { flagError, flagsIn } from "./flag-errors.js";
import { RLS_FLAG_OPTIONS, RLS_USAGE, type RlsArgs, parseRlsArgs } from "./rls.js";
import { SENTINEL_FLAG_OPTIONS, SENTINEL_USAGE, type SentinelChoice, type SentinelFlagValues, parseSentinelChoice } from "./sentinel.js";

export { parseSentinelList, type SentinelChoice } from "./sentinel.js";

/**
 * `maxInFlight`: --max-inflight, the Redis store calls in flight at most (docs/operations.md).
 * `timeoutMs`: --redis-timeout (or REDIS_TIMEOUT), the store's per-call timeout.
 */
export type StoreChoice = { kind: "memory"; maxKeys?: number } | ({ kind: "redis"; url: string } & RedisTuning) | ({ kind: "redis-cluster"; urls: string[] } & RedisTuning) | (SentinelChoice & RedisTuning);

/** What every Redis store takes from the flags, whichever way it is reached. */
export interface RedisTuning {
  maxInFlight?: number;
  timeoutMs?: number;
}

/**
 * --redis-timeout's bounds. 1 ms: the store's own minimum (0 would fail every call). 10 s: a
 * decision that waits longer on Redis has outlived every caller's patience (Envoy's filter
 * waits 20 ms unless told otherwise, load balancers a few seconds) and Spillway's own queue
 * (a call waiting 10 s for a slot is shed): past that, a slow Redis is an outage, for failMode.
 */
export const MIN_REDIS_TIMEOUT_MS = 1;
export const MAX_REDIS_TIMEOUT_MS = 10_000;

export interface ServeArgs {
  /** Optional only with --rls-config (a rate limit service alone needs no spillway.config.json). */
  configPath?: string;
  port: number;
  hostname: string;
  store: StoreChoice;
  /** Prometheus /metrics, /v1/top, /v1/stats, /dashboard and decision log lines (--no-metrics: off). */
  metrics: boolean;
  /** --metrics-port: /metrics without the token on its own port (bound to --host). */
  metricsPort?: number;
  /** --rls-port / --rls-config: Envoy's rate limit service beside the HTTP server. */
  rls?: RlsArgs;
  /** --ext-authz-port: Envoy's ext_authz gRPC service (envoy.service.auth.v3.Authorization) on this port, bound to --host. */
  extAuthzPort?: number;
  /** --watch: reload --config when the file changes (as on SIGHUP). */
  watch?: boolean;
  /** --workers N|auto: N processes serving the same ports (cluster/primary.ts); Redis stores only. */
  workers?: number;
}

export const SERVE_USAGE = `usage: spillway serve --config FILE [--watch] [--port 8787] [--host 127.0.0.1]
                      [--redis URL | --redis-cluster URL,URL,... | --redis-sentinel HOST:PORT,... --redis-sentinel-name NAME
                       | --store memory [--memory-max-keys N]] [--max-inflight N] [--redis-timeout 50ms]
                      [--metrics-port N | --no-metrics] [--workers N|auto] [--ext-authz-port N]
                      [--rls-port N --rls-config PATH [--rls-host ADDR] [--rls-tls-cert FILE --rls-tls-key FILE] [--rls-response-headers]]

Serves the HTTP API (/v1), the gateway (a config with "origin" and "routes"), /healthz,
/metrics and the dashboard; with --rls-port, Envoy's rate limit service too. Choose one store.

  --config FILE          spillway.config.json (policies, gateway routes); re-read on SIGHUP
  --watch                also re-read --config when the file changes
  --port N               port to listen on (default 8787; 0 picks a free one)
  --host ADDR            address to listen on (default 127.0.0.1; 0.0.0.0 for every interface)
  --redis URL            a Redis server (default: $REDIS_URL; needs ioredis: npm install ioredis)
  --redis-cluster URLS   comma-separated seed nodes of a Redis Cluster
${SENTINEL_USAGE}
  --store memory         keep state in this process only (one process, lost on restart)
  --workers N|auto       N processes (auto: one per core) serving the same ports; Redis stores only;
                         one /metrics for all, SIGHUP and SIGTERM reach every one, a dead one is restarted
  --metrics-port N       also serve /metrics on this port without the token (bound to --host)
  --no-metrics           no /metrics, /v1/top, /v1/stats, /dashboard nor decision log lines
                         (they need prom-client and uplot: npm install prom-client uplot)
  --memory-max-keys N    (key, policy) states the memory store holds at most (default ${DEFAULT_MEMORY_MAX_KEYS});
                         beyond it the least recently used key is evicted and starts fresh
  --max-inflight N       Redis calls in flight at most (default ${DEFAULT_MAX_IN_FLIGHT}); past it calls wait their turn,
                         and when too many wait, requests are shed with 503 (never admitted)
  --redis-timeout D      how long a Redis call may take, from its write to the reply (default ${DEFAULT_TIMEOUT_MS}ms;
                         250ms, 1s, 1s500ms or a number of ms, 1ms to 10s; or REDIS_TIMEOUT); past it the call
                         fails and each policy's failMode decides (gRPC: UNAVAILABLE)
${RLS_USAGE}
  --ext-authz-port N     also answer Envoy's ext_authz (gRPC, envoy.service.auth.v3.Authorization) on this
                         port, bound to --host: the config's routes decide, as /v1/forward-auth does

environment: SPILLWAY_TOKEN (bearer token for /v1), REDIS_URL, REDIS_SENTINELS, REDIS_SENTINEL_NAME,
             REDIS_PASSWORD, REDIS_SENTINEL_PASSWORD, REDIS_SENTINEL_TLS, REDIS_TIMEOUT;
             traces: OTEL_TRACES_EXPORTER=otlp, OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_SERVICE_NAME, OTEL_TRACES_SAMPLER
signals: SIGHUP reloads --config (and --rls-config); SIGTERM and SIGINT stop gracefully
docs: node_modules/spillway/docs/serve.md`;

export const CHECK_USAGE = `usage: spillway check --config FILE       validate a spillway.config.json
       spillway check --rls-config PATH   validate envoyproxy/ratelimit config files

Starts nothing. Exit 0 when valid, 2 naming the file and the bad field.`;

export const RLS_COMMAND_USAGE = `usage: spillway rls

envoyproxy/ratelimit's service, configured as the reference is: by its environment variables
alone (REDIS_URL, RUNTIME_ROOT, RUNTIME_SUBDIRECTORY, GRPC_PORT, …; each one honoured,
ignored or refused naming it). Takes no arguments; SIGHUP re-reads the runtime files.
CONFIG_TYPE=GRPC_XDS_SOTW takes the config from an xDS server instead (Envoy Gateway).
Needs: npm install ioredis prom-client @grpc/grpc-js @grpc/proto-loader
docs: node_modules/spillway/docs/envoy.md ("spillway rls")`;

export const INIT_USAGE = `usage: spillway init DIR

Writes a Cloudflare Worker project into DIR (new or empty): its spillway.config.json, a
wrangler.toml and npm scripts that pin their own Node. Then: cd DIR && npm install && npm start`;

/**
 * Parses `spillway serve` flags. Every mistake is a ValidationError naming the flag; no
 * store is chosen silently, because a per-process memory store behind a load balancer
 * would quietly admit N times the limit.
 */
export function parseServeArgs(argv: string[], env: Record<string, string | undefined>): ServeArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: negativeValuesJoined(argv, SERVE_VALUE_FLAGS),
      strict: true,
      allowPositionals: false,
      options: {
        config: { type: "string" },
        port: { type: "string" },
        host: { type: "string" },
        redis: { type: "string" },
        "redis-cluster": { type: "string" },
        ...SENTINEL_FLAG_OPTIONS,
        store: { type: "string" },
        "memory-max-keys": { type: "string" },
        "max-inflight": { type: "string" },
        "redis-timeout": { type: "string" },
        "metrics-port": { type: "string" },
        "no-metrics": { type: "boolean" },
        watch: { type: "boolean" },
        workers: { type: "string" },
        ...RLS_FLAG_OPTIONS,
        "ext-authz-port": { type: "string" },
      },
    }));
  } catch (error) {
    throw flagError(error, "serve", flagsIn(SERVE_USAGE));
  }
  const rls = parseRlsArgs(values);
  if (!values.config && !rls.rls) throw new ValidationError("--config", "is required: the path of spillway.config.json");
  if (values.watch && !values.config) throw new ValidationError("--watch", "watches --config, which is not given (--rls-config reloads on SIGHUP)");
  const store = parseStore(values, env);
  const workers = parseWorkers(values.workers, store);
  const extAuthz = values["ext-authz-port"];
  if (extAuthz !== undefined && !values.config) throw new ValidationError("--ext-authz-port", "needs --config: ext_authz decides by the config's routes");
  return {
    ...(values.config ? { configPath: values.config } : {}),
    port: parsePort(values.port),
    hostname: values.host ?? "127.0.0.1",
    store,
    ...(workers !== undefined ? { workers } : {}),
    ...parseMetrics(values),
    ...rls,
    ...(extAuthz !== undefined ? { extAuthzPort: parsePort(extAuthz, "--ext-authz-port") } : {}),
    ...(values.watch ? { watch: true } : {}),
  };
}

/** serve's flags that take a number (each checks its own range). */
const SERVE_VALUE_FLAGS = new Set(["--port", "--metrics-port", "--rls-port", "--ext-authz-port", "--workers", "--redis-timeout", "--max-inflight", "--memory-max-keys"]);

/**
 * `--port -1` as `--port=-1`: node's parseArgs reads a value that starts with a dash as the
 * next flag and answers "argument is ambiguous", where the flag's own check names its range.
 */
function negativeValuesJoined(argv: readonly string[], flags: ReadonlySet<string>): string[] {
  const joined: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const next = argv[i + 1];
    if (flags.has(arg) && next !== undefined && /^-[\d.]/.test(next)) {
      joined.push(`${arg}=${next}`);
      i++;
    } else joined.push(arg);
  }
  return joined;
}

/** `--workers N|auto`: a positive integer, or one per core; never with the memory store, whose state would split. */
function parseWorkers(value: string | undefined, store: StoreChoice): number | undefined {
  if (value === undefined) return undefined;
  const workers = value === "auto" ? availableParallelism() : Number(value);
  if (value !== "auto" && (!/^\d+$/.test(value) || workers < 1 || workers > 1024)) throw new ValidationError("--workers", `must be a number of processes from 1 to 1024, or auto (one per core), got ${JSON.stringify(value)}`);
  if (store.kind === "memory") throw new ValidationError("--workers", "needs a Redis store (--redis, --redis-cluster or --redis-sentinel): with --store memory each worker would keep counts of its own and together admit N times the limit");
  return workers;
}

function parsePort(value: string | undefined, flag = "--port"): number {
  if (value === undefined) return 8787;
  const port = Number(value);
  if (!/^\d+$/.test(value) || port > 65535) throw new ValidationError(flag, `must be an integer from 0 to 65535, got ${JSON.stringify(value)}`);
  return port;
}

function parseMetrics(values: { "metrics-port"?: string; "no-metrics"?: boolean }): { metrics: boolean; metricsPort?: number } {
  const port = values["metrics-port"];
  if (values["no-metrics"]) {
    if (port !== undefined) throw new ValidationError("--metrics-port", "cannot be used with --no-metrics");
    return { metrics: false };
  }
  return port === undefined ? { metrics: true } : { metrics: true, metricsPort: parsePort(port, "--metrics-port") };
}

type StoreFlags = { redis?: string; "redis-cluster"?: string; store?: string; "memory-max-keys"?: string; "max-inflight"?: string; "redis-timeout"?: string } & SentinelFlagValues;

function parseStore(values: StoreFlags, env: Record<string, string | undefined>): StoreChoice {
  const choice = parseStoreKind(values, env);
  const maxInFlight = values["max-inflight"];
  const timeout = values["redis-timeout"];
  if (choice.kind === "memory") {
    if (maxInFlight !== undefined) throw new ValidationError("--max-inflight", "only applies to Redis (--redis, --redis-cluster, --redis-sentinel): the memory store answers in this process, with no calls in flight");
    if (timeout !== undefined) throw new ValidationError("--redis-timeout", "only applies to Redis (--redis, --redis-cluster, --redis-sentinel): the memory store answers in this process, with no calls to time out");
    // REDIS_TIMEOUT, like REDIS_URL, is the environment's and is not read for a store chosen by flag.
    return choice;
  }
  // The flag wins over the environment, as --redis does over REDIS_URL.
  const timeoutMs = timeout !== undefined ? parseRedisTimeout(timeout, "--redis-timeout") : env.REDIS_TIMEOUT ? parseRedisTimeout(env.REDIS_TIMEOUT, "REDIS_TIMEOUT") : undefined;
  return { ...choice, ...(maxInFlight !== undefined ? { maxInFlight: positiveInteger("--max-inflight", maxInFlight) } : {}), ...(timeoutMs !== undefined ? { timeoutMs } : {}) };
}

/**
 * `--redis-timeout 250ms`, `1s`, `0.5s`, `1s500ms` (any Go duration, as `spillway rls` reads
 * REDIS_TIMEOUT) or a number of milliseconds (`250`): a whole number of ms from
 * MIN_REDIS_TIMEOUT_MS to MAX_REDIS_TIMEOUT_MS. `field` is the flag or REDIS_TIMEOUT.
 */
export function parseRedisTimeout(text: string, field: string): number {
  const trimmed = text.trim();
  // A negative number or duration (-1, -5s) is one, out of range: said as the range below.
  const negative = /^-(?:\d|\.\d)/.test(trimmed);
  const unsigned = negative ? trimmed.slice(1) : trimmed;
  const magnitude = /^\d+(?:\.\d+)?$/.test(unsigned) ? Number(unsigned) : goDurationMs(unsigned);
  const exact = magnitude === undefined ? undefined : negative ? -magnitude : magnitude;
  if (exact === undefined) throw new ValidationError(field, `must be a duration such as 250ms, 1s or 1s500ms (or a number of milliseconds), got ${JSON.stringify(text)}`);
  // 1.005s is 1004.9999999999999 ms in floats: rounded at a nanosecond, as Go would hold it.
  const ms = Math.round(exact * 1e6) / 1e6;
  const outOfRange = () => new ValidationError(field, `must be from 1ms to 10s (default ${DEFAULT_TIMEOUT_MS}ms): 0 would fail every call, and past 10s a slow Redis is an outage for failMode to decide; got ${JSON.stringify(text)}`);
  if (ms < 0) throw outOfRange();
  if (!Number.isInteger(ms)) throw new ValidationError(field, `must be a whole number of milliseconds, got ${JSON.stringify(text)}`);
  if (ms < MIN_REDIS_TIMEOUT_MS || ms > MAX_REDIS_TIMEOUT_MS) throw outOfRange();
  return ms;
}

function parseStoreKind(values: StoreFlags, env: Record<string, string | undefined>): StoreChoice {
  const maxKeys = values["memory-max-keys"];
  if (maxKeys !== undefined && values.store !== "memory") throw new ValidationError("--memory-max-keys", "only applies to --store memory (Redis keys expire on their own)");
  const chosen = [values.redis !== undefined, values["redis-cluster"] !== undefined, values["redis-sentinel"] !== undefined, values.store !== undefined].filter(Boolean).length;
  if (chosen > 1) throw new ValidationError("--store", "choose one of --redis, --redis-cluster, --redis-sentinel and --store");
  // The environment chooses only when no flag did; then it too must name one store.
  if (chosen === 0 && env.REDIS_URL !== undefined && env.REDIS_SENTINELS !== undefined) throw new ValidationError("REDIS_SENTINELS", "and REDIS_URL are both set: unset one (or choose with --redis or --redis-sentinel)");
  const sentinel = parseSentinelChoice(values, env, chosen > 0 && values["redis-sentinel"] === undefined);
  if (sentinel) return sentinel;
  if (values.store !== undefined) {
    if (values.store === "memory") return maxKeys === undefined ? { kind: "memory" } : { kind: "memory", maxKeys: parseMaxKeys(maxKeys) };
    throw new ValidationError("--store", `must be "memory" (use --redis URL or --redis-cluster URLS for Redis), got ${JSON.stringify(values.store)}`);
  }
  if (values["redis-cluster"] !== undefined) {
    const urls = values["redis-cluster"].split(",").map((url) => url.trim()).filter(Boolean);
    if (urls.length === 0) throw new ValidationError("--redis-cluster", "must list at least one redis:// URL");
    urls.forEach((url) => checkRedisUrl(url, "--redis-cluster"));
    return { kind: "redis-cluster", urls };
  }
  const url = values.redis ?? env.REDIS_URL;
  if (url !== undefined) {
    checkRedisUrl(url, values.redis !== undefined ? "--redis" : "REDIS_URL");
    return { kind: "redis", url };
  }
  throw new ValidationError("--store", "no store chosen: pass --redis URL (or set REDIS_URL), --redis-cluster URLS, --redis-sentinel HOST:PORT,... --redis-sentinel-name NAME, or --store memory");
}

function parseMaxKeys(value: string): number {
  return positiveInteger("--memory-max-keys", value);
}

function positiveInteger(flag: string, value: string): number {
  const number = Number(value);
  if (!/^\d+$/.test(value) || number < 1 || !Number.isSafeInteger(number)) throw new ValidationError(flag, `must be a positive integer, got ${JSON.stringify(value)}`);
  return number;
}

/** The store's own URL rule (validateRedisUrl), as a flag's ValidationError (exit 2). */
function checkRedisUrl(url: string, field: string): void {
  try {
    validateRedisUrl(url, field);
  } catch (error) {
    throw new ValidationError(field, (error as Error).message.slice(field.length).replace(/^:?\s*/, ""));
  }
}

/** Parses `spillway check` flags: `--config FILE`, `--rls-config PATH`, or both. */
export function parseCheckArgs(argv: string[]): { configPath?: string; rlsConfigPath?: string } {
  let values;
  try {
    ({ values } = parseArgs({ args: argv, strict: true, allowPositionals: false, options: { config: { type: "string" }, "rls-config": { type: "string" } } }));
  } catch (error) {
    throw flagError(error, "check", ["config", "rls-config"]);
  }
  if (!values.config && !values["rls-config"]) throw new ValidationError("--config", "is required: the path of spillway.config.json (or --rls-config PATH)");
  return { ...(values.config ? { configPath: values.config } : {}), ...(values["rls-config"] ? { rlsConfigPath: values["rls-config"] } : {}) };
}
