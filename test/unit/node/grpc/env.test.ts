import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parseGoDurationMs, parseRlsEnv } from "../../../../src/node/grpc/env.js";
import { RLS_ENV_ROWS } from "../../../../src/node/grpc/env-table.js";

/** Every variable of envoyproxy/ratelimit's src/settings/settings.go (its envconfig tags, in order). */
const REFERENCE_VARIABLES =
  "HOST PORT DEBUG_HOST DEBUG_PORT GRPC_UDS GRPC_HOST GRPC_PORT GRPC_MAX_CONNECTION_AGE GRPC_MAX_CONNECTION_AGE_GRACE GRPC_SERVER_USE_TLS GRPC_SERVER_TLS_CERT GRPC_SERVER_TLS_KEY GRPC_CLIENT_TLS_CACERT GRPC_CLIENT_TLS_SAN LOG_LEVEL LOG_FORMAT CONFIG_TYPE FORCE_START_WITHOUT_INITIAL_CONFIG CONFIG_GRPC_XDS_NODE_ID CONFIG_GRPC_XDS_NODE_METADATA CONFIG_GRPC_XDS_SERVER_URL CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS CONFIG_GRPC_XDS_SERVER_USE_TLS CONFIG_GRPC_XDS_CLIENT_TLS_CERT CONFIG_GRPC_XDS_CLIENT_TLS_KEY CONFIG_GRPC_XDS_SERVER_TLS_CACERT CONFIG_GRPC_XDS_SERVER_TLS_SAN XDS_CLIENT_BACKOFF_INITIAL_INTERVAL XDS_CLIENT_BACKOFF_MAX_INTERVAL XDS_CLIENT_BACKOFF_RANDOM_FACTOR XDS_CLIENT_BACKOFF_JITTER XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES USE_DOG_STATSD USE_DOG_STATSD_MOGRIFIERS USE_STATSD STATSD_HOST STATSD_PORT EXTRA_TAGS STATS_FLUSH_INTERVAL DISABLE_STATS USE_PROMETHEUS PROMETHEUS_ADDR PROMETHEUS_PATH PROMETHEUS_MAPPER_YAML PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS RUNTIME_ROOT RUNTIME_SUBDIRECTORY RUNTIME_APPDIRECTORY RUNTIME_IGNOREDOTFILES RUNTIME_WATCH_ROOT EXPIRATION_JITTER_MAX_SECONDS LOCAL_CACHE_SIZE_IN_BYTES NEAR_LIMIT_RATIO CACHE_KEY_PREFIX BACKEND_TYPE STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT LIMIT_RESPONSE_HEADERS_ENABLED LIMIT_LIMIT_HEADER LIMIT_REMAINING_HEADER LIMIT_RESET_HEADER HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED REDIS_SOCKET_TYPE REDIS_TYPE REDIS_URL REDIS_POOL_SIZE REDIS_AUTH REDIS_TLS REDIS_TLS_CLIENT_CERT REDIS_TLS_CLIENT_KEY REDIS_TLS_CACERT REDIS_TLS_SKIP_HOSTNAME_VERIFICATION REDIS_PIPELINE_WINDOW REDIS_PIPELINE_LIMIT REDIS_CLUSTER_PIPELINE_PARALLELISM REDIS_PERSECOND REDIS_PERSECOND_SOCKET_TYPE REDIS_PERSECOND_TYPE REDIS_PERSECOND_URL REDIS_PERSECOND_POOL_SIZE REDIS_PERSECOND_AUTH REDIS_PERSECOND_TLS REDIS_SENTINEL_AUTH REDIS_PERSECOND_SENTINEL_AUTH REDIS_PERSECOND_PIPELINE_WINDOW REDIS_PERSECOND_PIPELINE_LIMIT REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM REDIS_HEALTH_CHECK_ACTIVE_CONNECTION REDIS_TIMEOUT REDIS_PERSECOND_TIMEOUT REDIS_POOL_ON_EMPTY_BEHAVIOR REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR REDIS_STARTUP_INITIAL_INTERVAL REDIS_STARTUP_MAX_INTERVAL REDIS_STARTUP_MAX_ELAPSED_TIME MEMCACHE_HOST_PORT MEMCACHE_MAX_IDLE_CONNS MEMCACHE_SRV MEMCACHE_SRV_REFRESH MEMCACHE_TLS MEMCACHE_TLS_CLIENT_CERT MEMCACHE_TLS_CLIENT_KEY MEMCACHE_TLS_CACERT MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION SHADOW_MODE QUOTA_MODE RESPONSE_DYNAMIC_METADATA MERGE_DOMAIN_CONFIG TRACING_ENABLED TRACING_SERVICE_NAME TRACING_SERVICE_NAMESPACE TRACING_SERVICE_INSTANCE_ID TRACING_EXPORTER_PROTOCOL TRACING_SAMPLING_RATE".split(
    " ",
  );

const BASE = { REDIS_SOCKET_TYPE: "tcp", REDIS_URL: "127.0.0.1:6379" };
const failure = (env: Record<string, string>, base: Record<string, string> = BASE) => {
  try {
    parseRlsEnv({ ...base, ...env });
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error("parsed without an error");
};

describe("spillway rls: the reference's variables", () => {
  it("the table has one row for each variable of the reference's settings, and docs/envoy.md the same rows", async () => {
    expect(RLS_ENV_ROWS.map((row) => row.name).sort()).toEqual([...REFERENCE_VARIABLES].sort());
    const docs = await readFile(new URL("../../../../docs/envoy.md", import.meta.url), "utf8");
    const documented = new Map([...docs.matchAll(/^\| `([A-Z0-9_]+)` \| (honoured|not applicable|refused)/gm)].map((match) => [match[1], match[2]]));
    const words = { honoured: "honoured", ignored: "not applicable", refused: "refused" } as const;
    for (const row of RLS_ENV_ROWS) expect([row.name, documented.get(row.name)]).toEqual([row.name, words[row.kind]]);
    expect(documented.size).toBe(REFERENCE_VARIABLES.length);
  });

  it.each([
    ["BACKEND_TYPE", "memcache"],
    ["MERGE_DOMAIN_CONFIG", "true"],
    ["REDIS_PERSECOND", "true"],
    ["REDIS_POOL_ON_EMPTY_BEHAVIOR", "ERROR"],
    ["GRPC_CLIENT_TLS_SAN", "client.example"],
  ])("refuses %s=%s at startup, naming it", (name, value) => {
    expect(failure({ [name]: value })).toMatch(new RegExp(`^${name}: "${value.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")}" is not supported by spillway rls: `));
  });

  it("accepts the refused variables at the values that ask for nothing else", () => {
    expect(() => parseRlsEnv({ ...BASE, CONFIG_TYPE: "FILE", BACKEND_TYPE: "redis", MERGE_DOMAIN_CONFIG: "false", REDIS_PERSECOND: "false", REDIS_POOL_ON_EMPTY_BEHAVIOR: "WAIT", GRPC_CLIENT_TLS_SAN: "" })).not.toThrow();
  });

  it("names the set variables that do not apply, leaving out switches set to false", () => {
    const { ignored } = parseRlsEnv({ ...BASE, USE_STATSD: "false", STATSD_HOST: "statsd", LOCAL_CACHE_SIZE_IN_BYTES: "1000", TRACING_ENABLED: "0" });
    expect(ignored).toEqual(["STATSD_HOST", "LOCAL_CACHE_SIZE_IN_BYTES"]);
  });

  it("reads REDIS_URL in the reference's forms", () => {
    expect(parseRlsEnv({}).settings.redis).toMatchObject({ type: "single", socketPath: "/var/run/nutcracker/ratelimit.sock" });
    expect(parseRlsEnv({ ...BASE, REDIS_AUTH: "pw" }).settings.redis).toMatchObject({ nodes: [{ host: "127.0.0.1", port: 6379 }], password: "pw" });
    expect(parseRlsEnv({ ...BASE, REDIS_AUTH: "user:p:w" }).settings.redis).toMatchObject({ username: "user", password: "p:w" });
    expect(parseRlsEnv({ REDIS_TYPE: "CLUSTER", REDIS_URL: "a:7000,b:7001" }).settings.redis.nodes).toEqual([{ host: "a", port: 7000 }, { host: "b", port: 7001 }]);
    expect(parseRlsEnv({ REDIS_TYPE: "sentinel", REDIS_URL: "mymaster,s1:26379,s2:26379", REDIS_SENTINEL_AUTH: "spw" }).settings.redis).toMatchObject({ sentinelName: "mymaster", nodes: [{ host: "s1", port: 26379 }, { host: "s2", port: 26379 }], sentinelPassword: "spw" });
  });

  it("takes a socket path under REDIS_SOCKET_TYPE=unix (the default), and refuses a TCP address there, saying what to set", () => {
    const unixFailure = (env: Record<string, string>) => failure(env, {});
    for (const path of ["/tmp/redis.sock", "redis.sock", "./run/a:1"]) expect(parseRlsEnv({ REDIS_URL: path }).settings.redis.socketPath).toBe(path);
    const set = (address: string) => `but REDIS_SOCKET_TYPE is unix (the reference's default), which reads REDIS_URL as a socket path: set REDIS_SOCKET_TYPE=tcp and REDIS_URL=${address} (host:port, as the reference reads it)`;
    expect(unixFailure({ REDIS_URL: "redis://127.0.0.1:6379" })).toBe(`REDIS_URL: "redis://127.0.0.1:6379" is a TCP address, ${set("127.0.0.1:6379")}`);
    expect(unixFailure({ REDIS_URL: "127.0.0.1:6379" })).toBe(`REDIS_URL: "127.0.0.1:6379" is a TCP address, ${set("127.0.0.1:6379")}`);
    expect(unixFailure({ REDIS_SOCKET_TYPE: "UNIX", REDIS_URL: "cache.internal:6380" })).toContain(set("cache.internal:6380"));
    expect(unixFailure({ REDIS_URL: "[::1]:6379" })).toContain(set("[::1]:6379"));
    // A password is never echoed; TLS and the password are said where they go.
    expect(unixFailure({ REDIS_URL: "rediss://u:secret@cache.internal" })).toBe(`REDIS_URL: "rediss://…@cache.internal" is a TCP address, ${set("cache.internal:6379")}, with REDIS_TLS=true and its password in REDIS_AUTH`);
    expect(failure({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: "redis://:secret@127.0.0.1:6379" })).toBe('REDIS_URL: must be host:port (as the reference reads it), not a URL: 127.0.0.1:6379, got "redis://…@127.0.0.1:6379"');
  });

  it.each([
    [{ GRPC_PORT: "http" }, 'GRPC_PORT: must be an integer from 0 to 65535, got "http"'],
    [{ SHADOW_MODE: "yes" }, 'SHADOW_MODE: must be true or false, got "yes"'],
    [{ LOG_LEVEL: "loud" }, "LOG_LEVEL: must be one of debug, info, warn, error"],
    [{ LOG_FORMAT: "xml" }, 'LOG_FORMAT: must be text or json, got "xml"'],
    [{ GRPC_MAX_CONNECTION_AGE: "1 day" }, "GRPC_MAX_CONNECTION_AGE: must be a Go duration"],
    [{ GRPC_SERVER_USE_TLS: "true" }, "GRPC_SERVER_TLS_CERT: is required with GRPC_SERVER_USE_TLS=true"],
    [{ REDIS_TLS: "true", REDIS_TLS_CLIENT_CERT: "c.pem" }, "REDIS_TLS_CLIENT_KEY: is required"],
    [{ NEAR_LIMIT_RATIO: "80%" }, 'NEAR_LIMIT_RATIO: must be a number from 0 to 1, got "80%"'],
    [{ USE_PROMETHEUS: "true", PROMETHEUS_PATH: "metrics" }, 'PROMETHEUS_PATH: must be a path starting with /, got "metrics"'],
    [{ LIMIT_RESPONSE_HEADERS_ENABLED: "true", LIMIT_RESET_HEADER: "Reset Time" }, 'LIMIT_RESET_HEADER: must be an HTTP header name, got "Reset Time"'],
  ])("names the variable of a bad value: %j", (env, message) => {
    expect(failure(env as Record<string, string>)).toContain(message);
  });

  it("reads durations as Go writes them", () => {
    expect(parseGoDurationMs("X", "24h")).toBe(86_400_000);
    expect(parseGoDurationMs("X", "1h30m")).toBe(5_400_000);
    expect(parseGoDurationMs("X", "1.5s")).toBe(1500);
    expect(parseGoDurationMs("X", "250ms")).toBe(250);
    expect(parseGoDurationMs("X", "0")).toBe(0);
  });
});
