/**
 * `spillway/hono`: the `rateLimit()` middleware and the in-process store. The other stores come
 * from their own entry points (`RedisStore` from `spillway/redis`; `DurableObjectStore` from
 * `spillway/worker`, whose types need the Workers runtime's), so a Node app type-checks with
 * Node's types alone.
 *
 * @example
 * import { rateLimit, MemoryStore } from "spillway/hono";
 * app.use("/api/*", rateLimit({ store: new MemoryStore(), policies: [{ name: "per-ip", limit: 100, period: "1m" }], key: (c) => c.req.header("x-api-key") }));
 */
export * from "./http/middleware.js";
export { MemoryStore } from "./stores/memory.js";
export { ipKey, type IpKeySource } from "./gateway/ip.js";
export type { Limiter, StoreHealth } from "./core/limiter.js";
export { LocalCache, type LocalCacheOptions } from "./local/local-cache.js";
export { ForwardingLimiter } from "./core/limiter.js";
