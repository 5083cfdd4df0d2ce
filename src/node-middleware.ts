/**
 * `spillway/node`: the `rateLimit()` middleware for Express and plain node:http, and the
 * in-process store (RedisStore is in `spillway/redis`).
 *
 * @example
 * import { MemoryStore, rateLimit } from "spillway/node";
 * app.use(rateLimit({ store: new MemoryStore(), policies: { name: "per-ip", limit: 100, period: "1m" }, key: (req) => req.socket.remoteAddress }));
 */
export { type NextFunction, type NodeMiddleware, type NodeRateLimitOptions, rateLimit } from "./node/middleware.js";
export type { PolicyInput, RateLimitBaseOptions, RateLimitKey } from "./http/rate-limit-plan.js";
export type { LogFn } from "./http/limit.js";
export { MemoryStore } from "./stores/memory.js";
export type { Limiter, StoreHealth } from "./limiter.js";
