/**
 * Every variable of envoyproxy/ratelimit's settings (src/settings/settings.go), and what
 * `spillway rls` does with it (docs/envoy.md has the same table in words, and a test holds
 * the two together):
 *
 * - honoured: read by env.ts, mapped to what `flag` says;
 * - ignored: not applicable here (telemetry Spillway does not speak, tuning of the reference's
 *   own machinery); one startup line names those that are set;
 * - refused: asks for behaviour Spillway does not have; when `refuses(value)` says so, startup
 *   fails (exit 2) naming the variable, rather than serving something else silently.
 */
export type RlsEnvRow =
  | { name: string; kind: "honoured"; flag: string }
  | { name: string; kind: "ignored"; why: string }
  | { name: string; kind: "refused"; why: string; refuses: (value: string) => boolean };

const honoured = (name: string, flag: string): RlsEnvRow => ({ name, kind: "honoured", flag });
const ignored = (why: string, ...names: string[]): RlsEnvRow[] => names.map((name) => ({ name, kind: "ignored", why }));
/** Refused when set to anything but `allowed` (compared without case), or when set at all without it. */
const refusedUnless = (name: string, why: string, ...allowed: string[]): RlsEnvRow => ({
  name,
  kind: "refused",
  why,
  refuses: (value) => value !== "" && !allowed.includes(value.toLowerCase()),
});

const FALSE = ["false", "0", "f"];
const STATSD = "statsd and DogStatsD are not spoken: Spillway's stats are on Prometheus (USE_PROMETHEUS)";
const PER_SECOND = "only read with REDIS_PERSECOND=true, which is refused";
const MEMCACHE = "only read with BACKEND_TYPE=memcache, which is refused";
const POOL = "tuning of the reference's Redis connection pool: Spillway pipelines every call on one connection per node (docs/operations.md)";

export const RLS_ENV_ROWS: readonly RlsEnvRow[] = [
  honoured("HOST", "--host of the HTTP side (/healthcheck, /healthz); default 0.0.0.0"),
  honoured("PORT", "--port of the HTTP side; default 8080"),
  ...ignored("the reference's debug listener (Go pprof, /rlconfig); `spillway check --rls-config` validates the files", "DEBUG_HOST", "DEBUG_PORT"),
  honoured("GRPC_UDS", "the gRPC service on this unix socket instead of GRPC_HOST:GRPC_PORT"),
  honoured("GRPC_HOST", "--host of the gRPC service; default 0.0.0.0"),
  honoured("GRPC_PORT", "--rls-port; default 8081"),
  honoured("GRPC_MAX_CONNECTION_AGE", "grpc.max_connection_age_ms (a Go duration; default 24h)"),
  honoured("GRPC_MAX_CONNECTION_AGE_GRACE", "grpc.max_connection_age_grace_ms (default 1h)"),
  honoured("GRPC_SERVER_USE_TLS", "TLS on the gRPC port with GRPC_SERVER_TLS_CERT and _KEY (--rls-tls-cert, --rls-tls-key)"),
  honoured("GRPC_SERVER_TLS_CERT", "--rls-tls-cert"),
  honoured("GRPC_SERVER_TLS_KEY", "--rls-tls-key"),
  honoured("GRPC_CLIENT_TLS_CACERT", "clients must present a certificate signed by this CA (mutual TLS)"),
  { name: "GRPC_CLIENT_TLS_SAN", kind: "refused", why: "checking a client certificate's SAN is not supported (GRPC_CLIENT_TLS_CACERT checks the CA)", refuses: (value) => value !== "" },
  honoured("LOG_LEVEL", "debug, info, warn (default) or error; trace, fatal and panic are read as debug and error"),
  honoured("LOG_FORMAT", "text (logfmt, default) or json (@timestamp, level, @message)"),
  honoured("CONFIG_TYPE", "FILE (default): the runtime directory; GRPC_XDS_SOTW: RateLimitConfig resources from an xDS server (State of the World, aggregated); anything else stops startup"),
  honoured("FORCE_START_WITHOUT_INITIAL_CONFIG", "with GRPC_XDS_SOTW: serve before the first config arrives (calls are UNAVAILABLE until then); false (default): nothing listens until it arrives"),
  honoured("CONFIG_GRPC_XDS_NODE_ID", "the node id sent to the xDS server (default default)"),
  honoured("CONFIG_GRPC_XDS_NODE_METADATA", "key=value,key=value: the node's metadata (string values)"),
  honoured("CONFIG_GRPC_XDS_SERVER_URL", "host:port of the xDS server (default localhost:18000; Envoy Gateway's controller is on 18001)"),
  honoured("CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "the wait before connecting again after the stream ends or fails (a Go duration; default 3s); the config in force stays meanwhile"),
  honoured("CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", "name:value,name:value: gRPC metadata on the xDS stream"),
  honoured("CONFIG_GRPC_XDS_SERVER_USE_TLS", "TLS to the xDS server (Node's bundled CAs, plus CONFIG_GRPC_XDS_SERVER_TLS_CACERT)"),
  honoured("CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "client certificate (PEM file) for mutual TLS to the xDS server"),
  honoured("CONFIG_GRPC_XDS_CLIENT_TLS_KEY", "its key"),
  honoured("CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "a CA (PEM file) the xDS server's certificate may be signed by"),
  honoured("CONFIG_GRPC_XDS_SERVER_TLS_SAN", "the name the xDS server's certificate must carry (default: the host of CONFIG_GRPC_XDS_SERVER_URL)"),
  ...ignored(
    "the reference's backoff between xDS reconnections; Spillway waits CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL each time",
    "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
    "XDS_CLIENT_BACKOFF_MAX_INTERVAL",
    "XDS_CLIENT_BACKOFF_RANDOM_FACTOR",
    "XDS_CLIENT_BACKOFF_JITTER",
  ),
  honoured("XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "the largest xDS response taken (default gRPC's 4 MiB)"),
  ...ignored(STATSD, "USE_DOG_STATSD", "USE_DOG_STATSD_MOGRIFIERS", "USE_STATSD", "STATSD_HOST", "STATSD_PORT", "EXTRA_TAGS", "STATS_FLUSH_INTERVAL"),
  honoured("DISABLE_STATS", "no per-rule stats are kept, and no Prometheus listener starts (as the reference then has no stats sink)"),
  honoured("USE_PROMETHEUS", "serve the stats on PROMETHEUS_ADDR (--metrics-port)"),
  honoured("PROMETHEUS_ADDR", "host:port of the metrics listener (default :9090)"),
  honoured("PROMETHEUS_PATH", "its path (default /metrics)"),
  honoured("PROMETHEUS_MAPPER_YAML", "a statsd_exporter mapping file (glob or regex match, name, labels with $1 captures, action: drop) applied to the reference's stat names (ratelimit.service.rate_limit.<domain>.<key>.<stat>); a missing file: no mapping, as in the reference (names escaped, no labels); a malformed one stops startup"),
  ...ignored("no response-time histogram is exported", "PROMETHEUS_RESPONSE_TIME_AS_MILLISECONDS"),
  honoured("RUNTIME_ROOT", "the runtime root (default /srv/runtime_data/current); the files are RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY/**"),
  honoured("RUNTIME_SUBDIRECTORY", "the subdirectory of the root"),
  honoured("RUNTIME_APPDIRECTORY", "the config directory in it (default config)"),
  honoured("RUNTIME_IGNOREDOTFILES", "skip files and directories whose name starts with a dot (default: they are read, as in the reference)"),
  honoured("RUNTIME_WATCH_ROOT", "true (default): reload when RUNTIME_ROOT (a symlink) is swapped; false: reload when a file in the config directory changes"),
  ...ignored("Spillway's keys expire exactly when their state is fresh again; there is no INCR key to spread", "EXPIRATION_JITTER_MAX_SECONDS"),
  ...ignored("the reference's over-limit cache; Spillway decides every descriptor in the store (hot-key caches are not offered on RLS descriptors)", "LOCAL_CACHE_SIZE_IN_BYTES"),
  honoured("NEAR_LIMIT_RATIO", "the near_limit stat's threshold (default 0.8)"),
  honoured("CACHE_KEY_PREFIX", "the Redis key prefix (Spillway's default spillway:); no braces"),
  refusedUnless("BACKEND_TYPE", "only redis: memcache is not a Spillway store", "redis"),
  ...ignored("Spillway never counts a refused request: a request's descriptors are decided all-or-nothing", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT"),
  honoured("LIMIT_RESPONSE_HEADERS_ENABLED", "the reference's RateLimit-Limit, -Remaining and -Reset headers in response_headers_to_add"),
  honoured("LIMIT_LIMIT_HEADER", "that header's name"),
  honoured("LIMIT_REMAINING_HEADER", "that header's name"),
  honoured("LIMIT_RESET_HEADER", "that header's name"),
  honoured("HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "health answers NOT_SERVING (HTTP 500) while no domain is loaded"),
  honoured("REDIS_SOCKET_TYPE", "tcp, or unix (the default: REDIS_URL is a socket path, and a TCP address there stops startup saying to set tcp)"),
  honoured("REDIS_TYPE", "single (default), cluster or sentinel (the store follows the master through failovers, docs/redis.md)"),
  honoured("REDIS_URL", "host:port (with REDIS_SOCKET_TYPE=tcp; never redis://, which serve reads), a socket path, host:port,host:port (cluster) or name,host:port,... (sentinel)"),
  ...ignored(POOL, "REDIS_POOL_SIZE", "REDIS_PIPELINE_WINDOW", "REDIS_PIPELINE_LIMIT", "REDIS_CLUSTER_PIPELINE_PARALLELISM"),
  honoured("REDIS_AUTH", "the Redis password, or user:password (ACL)"),
  honoured("REDIS_TLS", "TLS to Redis"),
  honoured("REDIS_TLS_CLIENT_CERT", "client certificate (PEM file) for Redis TLS"),
  honoured("REDIS_TLS_CLIENT_KEY", "its key"),
  honoured("REDIS_TLS_CACERT", "the CA (PEM file) Redis's certificate is checked against (default: the system's)"),
  honoured("REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "accept a Redis certificate for another name (still checked against the CA)"),
  refusedUnless("REDIS_PERSECOND", "a second Redis for per-second limits is not supported: one store holds every counter", ...FALSE),
  ...ignored(
    PER_SECOND,
    "REDIS_PERSECOND_SOCKET_TYPE",
    "REDIS_PERSECOND_TYPE",
    "REDIS_PERSECOND_URL",
    "REDIS_PERSECOND_POOL_SIZE",
    "REDIS_PERSECOND_AUTH",
    "REDIS_PERSECOND_TLS",
    "REDIS_PERSECOND_SENTINEL_AUTH",
    "REDIS_PERSECOND_PIPELINE_WINDOW",
    "REDIS_PERSECOND_PIPELINE_LIMIT",
    "REDIS_PERSECOND_CLUSTER_PIPELINE_PARALLELISM",
    "REDIS_PERSECOND_TIMEOUT",
    "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
  ),
  honoured("REDIS_SENTINEL_AUTH", "the Sentinels' own password, or user:password (REDIS_TYPE=sentinel)"),
  ...ignored("health always asks the store (PING)", "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION"),
  honoured("REDIS_TIMEOUT", "the store's per-call timeout (a Go duration); unset: Spillway's 50 ms, not the reference's 10 s. Envoy's filter waits only its own `timeout` (20 ms unless set): set that above this one, e.g. 0.25s, so that Spillway's answer (UNAVAILABLE, or OK for failMode: open) is the one Envoy acts on"),
  refusedUnless("REDIS_POOL_ON_EMPTY_BEHAVIOR", "only WAIT (the reference itself refuses CREATE and ERROR)", "wait"),
  ...ignored(
    "Spillway serves at once and reconnects in the background: until Redis answers, calls are UNAVAILABLE (or admitted by failMode: open) and health says NOT_SERVING",
    "REDIS_STARTUP_INITIAL_INTERVAL",
    "REDIS_STARTUP_MAX_INTERVAL",
    "REDIS_STARTUP_MAX_ELAPSED_TIME",
  ),
  ...ignored(
    MEMCACHE,
    "MEMCACHE_HOST_PORT",
    "MEMCACHE_MAX_IDLE_CONNS",
    "MEMCACHE_SRV",
    "MEMCACHE_SRV_REFRESH",
    "MEMCACHE_TLS",
    "MEMCACHE_TLS_CLIENT_CERT",
    "MEMCACHE_TLS_CLIENT_KEY",
    "MEMCACHE_TLS_CACERT",
    "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
  ),
  honoured("SHADOW_MODE", "every answer OK, statuses as decided (global shadow mode)"),
  honoured("QUOTA_MODE", "every descriptor a quota descriptor (global quota_mode)"),
  honoured("RESPONSE_DYNAMIC_METADATA", "dynamic_metadata on every answer, in the reference's shape"),
  refusedUnless("MERGE_DOMAIN_CONFIG", "one domain per file: a domain split over files is not merged", ...FALSE),
  // Read by src/node/tracing/settings.ts (rlsTraceSettings), before anything starts.
  honoured("TRACING_ENABLED", "true: spans of every ShouldRateLimit call and its store calls, exported over OTLP/HTTP to OTEL_EXPORTER_OTLP_ENDPOINT (default http://localhost:4318) or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (docs/observability.md, Traces)"),
  honoured("TRACING_SERVICE_NAME", "the spans' service.name (default RateLimit)"),
  honoured("TRACING_SERVICE_NAMESPACE", "their service.namespace"),
  honoured("TRACING_SERVICE_INSTANCE_ID", "their service.instance.id (default a random UUID, as the reference's)"),
  honoured("TRACING_EXPORTER_PROTOCOL", "http (the default): OTLP/HTTP, in protobuf unless OTEL_EXPORTER_OTLP_PROTOCOL=http/json; grpc stops startup naming it (OTLP over gRPC is not exported: use the collector's port 4318)"),
  honoured("TRACING_SAMPLING_RATE", "the ratio of new traces sampled, parent-based as the reference's (default 1; 1 or more always, 0 or less never)"),
];
