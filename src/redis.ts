/**
 * `spillway/redis`: the Redis store (standalone or Cluster), one FCALL (or EVALSHA) per decision.
 *
 * @example
 * import { RedisStore } from "spillway/redis";
 * const limiter = new RedisStore({ url: "redis://127.0.0.1:6379" });
 */
export { RedisStore, REDIS_CLIENT_OPTIONS, DEFAULT_TIMEOUT_MS, type RedisStoreOptions } from "./stores/redis/store.js";
export { OverloadedError, StoreFaultError, StoreUnavailableError, type CallCounts, type Limiter } from "./core/limiter.js";
export { LocalCache, type LocalCacheOptions } from "./local/local-cache.js";
export { ForwardingLimiter } from "./core/limiter.js";
