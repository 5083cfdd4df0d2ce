import type { Limiter } from "../limiter.js";
import { LocalCache } from "../local/local-cache.js";
import { MemoryStore } from "../stores/memory.js";
import { RedisStore } from "../stores/redis/store.js";
import type { StoreChoice } from "./cli-args.js";

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
  const { maxInFlight } = choice;
  const store = choice.kind === "redis" ? new RedisStore({ url: choice.url, log, maxInFlight }) : new RedisStore({ clusterNodes: choice.urls, log, maxInFlight });
  // ready() has logged why (the URL, the system's error, a hint) when it answers false.
  if (!(await store.ready(STARTUP_WAIT_MS))) log(`spillway: serving anyway: policies follow their failMode until ${choice.kind} answers (/healthz says when)`);
  return new LocalCache(store);
}
