import { validateRedisUrl } from "./connection-errors.js";
import type { ConnectionOptions } from "node:tls";
import { Cluster, type ClusterNode, Redis, type RedisOptions } from "ioredis";
import type { RedisClient } from "./scripts.js";
import { SENTINEL_ONLY_FIELDS, type SentinelAddress, type SentinelStoreOptions, createSentinelClient } from "./sentinel.js";

export interface RedisStoreOptions {
  /** Your own ioredis client or Cluster (see `REDIS_CLIENT_OPTIONS` for the settings we advise). */
  client?: RedisClient;
  /** Or a URL to connect to (`redis://host:6379/0`). */
  url?: string;
  /** Or the startup nodes of a Redis Cluster (`["redis://10.0.0.1:7000", ...]`). */
  clusterNodes?: readonly (string | ClusterNode)[];
  /**
   * Or the sentinels of a master with replicas (Redis Sentinel), with `name`: the store
   * connects to the master they name and follows it through failovers (docs/redis.md).
   * @example new RedisStore({ sentinels: [{ host: "10.0.0.1", port: 26379 }, { host: "10.0.0.2", port: 26379 }], name: "mymaster" })
   */
  sentinels?: readonly SentinelAddress[];
  /** With `sentinels`: the master's name as the sentinels know it (`sentinel monitor NAME …`). */
  name?: string;
  /** With `sentinels`: the sentinels' own ACL user and password (`requirepass` in sentinel.conf). */
  sentinelUsername?: string;
  sentinelPassword?: string;
  /** With `sentinels`: the master's (and replicas') ACL user and password. */
  username?: string;
  password?: string;
  /** With `sentinels`: TLS to the master (true, or node:tls options); also to the sentinels unless `sentinelTls` says otherwise. */
  tls?: boolean | ConnectionOptions;
  /** With `sentinels`: TLS to the sentinels (default: as `tls`). */
  sentinelTls?: boolean | ConnectionOptions;
  /** With `sentinels`: the database number (default 0). */
  db?: number;
  /** Prefix of every key (default "spillway:"); must not contain braces. */
  keyPrefix?: string;
  /**
   * Whose clock decides (default "server": Redis's TIME, so many Node processes agree).
   * "client" passes `clockMs()` in: for Redis services that forbid TIME in scripts, and tests.
   */
  clock?: "server" | "client";
  /** The client clock (default Date.now); used only with `clock: "client"`. */
  clockMs?: () => number;
  /** Client clock only: keys live this much longer than their state, to absorb clock skew (default 1000). */
  clientExpirySlackMs?: number;
  /**
   * Per-call timeout in ms (default 50): past it the call throws StoreUnavailableError. It
   * measures the store: from the command's write to its reply, never time spent queued here.
   */
  timeoutMs?: number;
  /**
   * Calls in flight to Redis at most (default 256); past it calls wait their turn, FIFO (see
   * docs/operations.md, "Overload and bursts"). `spillway serve --max-inflight N`.
   */
  maxInFlight?: number;
  /** Calls waiting for a slot at most (default 20,000); one more is shed (OverloadedError, a 503 that never admits). */
  maxQueued?: number;
  /** How long a call may wait for a slot (default 10,000 ms); past it, it is shed. */
  queueTimeoutMs?: number;
  /** Lease waiters retry at least this often, in case a wake-up message is lost (default 250). */
  pollIntervalMs?: number;
  /** Where availability changes are logged (default console.warn). */
  log?: (line: string) => void;
  /**
   * Under load (many commands in flight on a connection), hold further writes to the end of
   * the event-loop turn and send them together (default true). See coalesce.ts.
   */
  coalesceWrites?: boolean;
  /** How often the data-loss markers are read back (default 1000 ms; see data-loss.ts). */
  dataCheckIntervalMs?: number;
}

export const DEFAULT_TIMEOUT_MS = 50;
export const DEFAULT_POLL_INTERVAL_MS = 250;

/**
 * ioredis settings for a limiter: fail fast instead of queueing while Redis is down (no
 * unbounded offline queue), never resend a command that already timed out for its caller
 * (it would consume quota nobody was told about), and reconnect quickly and forever.
 */
export const REDIS_CLIENT_OPTIONS = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  autoResendUnfulfilledCommands: false,
  connectTimeout: 1000,
  retryStrategy: (attempt: number) => Math.min(attempt * 50, 250),
} satisfies RedisOptions;

/** The ways to name a Redis: exactly one is given. */
const CONNECTION_FIELDS = ["client", "url", "clusterNodes", "sentinels"] as const;

/**
 * Checks that exactly one of client, url, clusterNodes and sentinels is given, and that the
 * Sentinel-only fields come with `sentinels`. Throws a TypeError naming the field.
 */
export function checkConnectionShape(options: RedisStoreOptions): void {
  const given = CONNECTION_FIELDS.filter((field) => options[field] !== undefined);
  if (given.length === 0) throw new TypeError("RedisStore needs one of client, url, clusterNodes or sentinels");
  if (given.length > 1) throw new TypeError(`RedisStore: ${given[1]} cannot be given with ${given[0]}: pass one of client, url, clusterNodes or sentinels`);
  if (options.sentinels !== undefined) return;
  const stray = SENTINEL_ONLY_FIELDS.find((field) => options[field] !== undefined);
  if (stray) throw new TypeError(`RedisStore: ${stray} applies only with sentinels${given[0] === "url" ? " (a url carries its own: rediss://user:password@host:6379/0)" : ""}`);
}

/** The client a store makes for itself from `url`, `clusterNodes` or `sentinels`. */
export function createClient(options: RedisStoreOptions): RedisClient {
  if (options.sentinels !== undefined) return createSentinelClient(options as SentinelStoreOptions, REDIS_CLIENT_OPTIONS);
  if (options.clusterNodes) {
    options.clusterNodes.forEach((node, index) => typeof node === "string" && validateRedisUrl(node, `RedisStore: clusterNodes.${index}`));
    return new Cluster([...options.clusterNodes], {
      enableOfflineQueue: false,
      clusterRetryStrategy: REDIS_CLIENT_OPTIONS.retryStrategy,
      redisOptions: REDIS_CLIENT_OPTIONS,
    });
  }
  if (options.url === undefined) throw new TypeError("RedisStore needs one of client, url, clusterNodes or sentinels");
  return new Redis(validateRedisUrl(options.url, "RedisStore: url"), REDIS_CLIENT_OPTIONS);
}

export function positiveNumber(name: string, value: number, min: number): number {
  if (!Number.isFinite(value) || value < min) throw new TypeError(`${name} must be a number ≥ ${min}, got ${value}`);
  return value;
}
