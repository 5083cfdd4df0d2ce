// A Redis client's connection as a store sees it: the states of an attempt, why the last one failed, the wait for one under way.
import type { Cluster } from "ioredis";
import type { RedisClient } from "./scripts.js";
import type { Subscriptions } from "./client-events.js";
import { describeConnectionError, redactRedisUrl } from "./connection-errors.js";
import type { RedisStoreOptions } from "./options.js";
import { SentinelErrors, type SentinelStoreOptions, sentinelTarget } from "./sentinel.js";

/** ioredis states of a connection attempt under way ("wait" is lazyConnect's: nothing is under way). */
export const CONNECTING: ReadonlySet<string> = new Set(["connecting", "connect"]);

/** Resolves when the client is ready, its attempt failed (close/end), or after `timeoutMs`. */
export function settledConnection(client: RedisClient, timeoutMs: number): Promise<void> {
  return new Promise((resolve) => {
    const settle = () => {
      clearTimeout(timer);
      for (const event of ["ready", "close", "end"]) client.off(event, settle);
      resolve();
    };
    const timer = setTimeout(settle, timeoutMs);
    for (const event of ["ready", "close", "end"]) client.once(event, settle);
  });
}

/** Whether the client is an ioredis Cluster (a plain Redis client has no isCluster flag). */
export function isCluster(client: RedisClient): client is Cluster {
  return "isCluster" in client && client.isCluster === true;
}

/**
 * One store's watch on its client's connection: why the last attempt failed (said for the way
 * the store connects: a URL, a Cluster, a Sentinel master), whether the client was ever ready,
 * and the wait for an attempt under way that the calls made meanwhile share.
 */
export class ConnectionWatch {
  /** Where this store connects, for messages (password hidden). */
  private readonly target: string | undefined;
  private readonly client: RedisClient;
  #error: string | undefined;
  /** The option that the last connection error blames, when retrying cannot fix it ("name": no such Sentinel master). */
  #errorField: "name" | "sentinels" | undefined;
  /** Whether the client has ever been ready: until then a call waits for the connection (connectWaitMs). */
  #everReady = false;
  /** The wait for a connection under way that calls made meanwhile share (settled). */
  private connecting: Promise<void> | undefined;

  /** `onReady`: called on each (re)connection, after the error is cleared. */
  constructor(client: RedisClient, options: RedisStoreOptions, setup: { readonly ownsClient: boolean; readonly subscriptions: Subscriptions }, onReady: () => void) {
    this.client = client;
    this.target = targetOf(options);
    // Reported through ready(), health(), the log and each call's error instead.
    // (A client of its own keeps this listener past close: its QUIT may still end in an error.)
    if (setup.ownsClient) this.watchErrors(options);
    setup.subscriptions.on(client, "ready", () => {
      this.#error = undefined;
      this.#errorField = undefined;
      this.#everReady = true;
      onReady();
    });
    this.#everReady = client.status === "ready";
  }

  /** Why the last connection attempt failed, or undefined while connected or before any attempt failed. */
  get error(): string | undefined {
    return this.#error;
  }

  /** The option the last connection error blames when no retry can fix it. */
  get errorField(): "name" | "sentinels" | undefined {
    return this.#errorField;
  }

  get everReady(): boolean {
    return this.#everReady;
  }

  /** Why the client is not ready: the last error, else its state and where it connects. */
  whyNotReady(): string {
    return this.#error ?? `still ${this.client.status}${this.target ? ` (${this.target.startsWith("master ") ? this.target : redactRedisUrl(this.target)})` : ""}`;
  }

  /** Resolves when the attempt under way settles (settledConnection), one wait shared by every call made meanwhile. */
  settled(waitMs: number): Promise<void> {
    return (this.connecting ??= settledConnection(this.client, waitMs).finally(() => (this.connecting = undefined)));
  }

  /** Keeps why the last attempt failed, said for the way this store connects. */
  private watchErrors(options: RedisStoreOptions): void {
    if (options.sentinels === undefined) {
      this.client.on("error", (error: Error) => (this.#error = describeConnectionError(error, this.target)));
      return;
    }
    const sentinel = new SentinelErrors(options as SentinelStoreOptions);
    this.client.on("sentinelError", (error: Error) => sentinel.sentinelFailed(error));
    this.client.on("error", (error: Error) => {
      const trouble = sentinel.roundFailed(error);
      this.#error = trouble?.message ?? describeConnectionError(error, undefined).replace("cannot connect to Redis", `cannot connect to Redis ${this.target}`);
      this.#errorField = trouble?.field;
    });
  }
}

/** The client's connect timeout (ioredis's default is 10 s; REDIS_CLIENT_OPTIONS sets 1 s). */
export function connectTimeoutOf(client: RedisClient): number {
  const options = client.options as { connectTimeout?: number; redisOptions?: { connectTimeout?: number } };
  const ms = options.connectTimeout ?? options.redisOptions?.connectTimeout ?? 10_000;
  return Number.isFinite(ms) && ms > 0 ? ms : 10_000;
}

/** Where the store connects, for messages: its URL, its Cluster's first startup node, or its Sentinel master. */
function targetOf(options: RedisStoreOptions): string | undefined {
  if (options.url !== undefined) return options.url;
  if (options.sentinels !== undefined) return sentinelTarget(options as SentinelStoreOptions);
  const first = options.clusterNodes?.[0];
  if (typeof first === "string") return first;
  if (typeof first === "number") return `redis://127.0.0.1:${first}`;
  return first ? `redis://${first.host ?? "127.0.0.1"}:${first.port ?? 6379}` : undefined;
}
