/**
 * `spillway/node`: the `rateLimit()` middleware for Express and plain node:http, the
 * in-process store (RedisStore is in `spillway/redis`), and Spillway's HTTP API server over
 * a store of your choosing (what `spillway serve` runs).
 *
 * @example
 * import { MemoryStore, rateLimit } from "spillway/node";
 * app.use(rateLimit({ store: new MemoryStore(), policies: { name: "per-ip", limit: 100, period: "1m" }, key: (req) => req.socket.remoteAddress }));
 *
 * @example
 * import { MemoryStore, parseConfig, startServer } from "spillway/node";
 * const server = await startServer({ config: parseConfig({ policies: [] }), limiter: new MemoryStore(), port: 8787, token: "secret" });
 */
export { type NextFunction, type NodeMiddleware, type NodeRateLimitMiddleware, type NodeRateLimitOptions, rateLimit } from "./node/http/middleware.js";
export type { PolicyInput, RateLimitBaseOptions, RateLimitInfo, RateLimitKey } from "./http/rate-limit-plan.js";
export { ipKey, type IpKeySource } from "./gateway/ip.js";
export type { CountOption, CostOption, StatusClass } from "./http/counting-options.js";
export type { LogFn } from "./http/limit.js";
export type { Denial } from "./http/middleware-options.js";
export type { HeaderStyle } from "./core/header-styles.js";
export { MemoryStore } from "./stores/memory.js";
export type { Limiter, StoreHealth } from "./core/limiter.js";
export { startServer, type RunningServer, type ServerOptions } from "./node/serve/server.js";
export type { RuntimeParts } from "./node/serve/runtime.js";
export { parseConfig, type SpillwayConfig } from "./config/config.js";
export { LocalCache, type LocalCacheOptions } from "./local/local-cache.js";
export { ForwardingLimiter } from "./core/limiter.js";
