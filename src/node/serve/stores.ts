import type { Limiter } from "../../core/limiter.js";
import { LocalCache } from "../../local/local-cache.js";
import { MemoryStore } from "../../stores/memory.js";
import { RedisStore, type RedisStoreOptions } from "../../stores/redis/store.js";
import { ValidationError } from "../../core/validation.js";
import type { StoreChoice } from "../args/serve.js";

/** How long `spillway serve` waits for Redis at start before serving anyway (failMode applies). */
const STARTUP_WAIT_MS = 3000;

/**
 * Builds the store `spillway serve` was asked for. A Redis that is down at start is not
 * fatal: the server starts, /healthz says so, policies follow their failMode, and the
 * client keeps reconnecting.
 *
 * Redis sits behind a LocalCache: policies with `local` (in the config or inline in a
 * request) get the deny cache and token batches in this process; others pass straight through.
 * The memory store needs none: it is already in the process.
 */
export async function createStore(choice: StoreChoice, log: (line: string) => void = console.warn): Promise<Limiter> {
  if (choice.kind === "memory") return new MemoryStore({ maxKeys: choice.maxKeys });
  // Lines logged while waiting for the first connection are held: a startup that ends in a
  // mistake says it in one line, not after the store's own line about the same thing.
  let held: string[] | undefined = [];
  const store = redisStoreFor(choice, (line) => (held ? held.push(line) : log(line)));
  const ready = await store.ready(STARTUP_WAIT_MS);
  const startupLines = held;
  held = undefined;
  // Sentinels that answer but know no such master: no retry fixes a misspelt name. No sentinel
  // answering at all (or each refusing the credentials) is a startup mistake too (issue 33): a
  // list of addresses that reaches nothing is a typo far more often than an outage of them all.
  if (!ready && store.connectionErrorField !== undefined) {
    await store.close();
    throw new ValidationError(store.connectionErrorField === "name" ? "--redis-sentinel-name" : "--redis-sentinel", store.connectionError!);
  }
  for (const line of startupLines) log(line);
  // ready() has logged why (the URL, the system's error, a hint) when it answers false.
  if (!ready) log(`spillway: serving anyway: policies follow their failMode until ${choice.kind} answers (/healthz says when)`);
  return new LocalCache(store);
}

function redisStoreFor(choice: Exclude<StoreChoice, { kind: "memory" }>, log: (line: string) => void): RedisStore {
  return new RedisStore({ ...redisStoreOptions(choice), log });
}

/**
 * The RedisStore options of a Redis choice: its connection, and the flags every kind takes
 * alike (--max-inflight, --redis-timeout; unset, the store's defaults).
 */
export function redisStoreOptions(choice: Exclude<StoreChoice, { kind: "memory" }>): RedisStoreOptions {
  const tuning = { ...(choice.maxInFlight !== undefined ? { maxInFlight: choice.maxInFlight } : {}), ...(choice.timeoutMs !== undefined ? { timeoutMs: choice.timeoutMs } : {}) };
  if (choice.kind === "redis") return { url: choice.url, ...tuning };
  if (choice.kind === "redis-cluster") return { clusterNodes: choice.urls, ...tuning };
  const { sentinels, name, password, sentinelPassword, tls } = choice;
  return { sentinels, name, password, sentinelPassword, tls, ...tuning };
}
