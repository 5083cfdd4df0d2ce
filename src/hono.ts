/**
 * `spillway/hono`: the `rateLimit()` middleware and the stores it can use.
 *
 * @example
 * import { rateLimit, MemoryStore } from "spillway/hono";
 * app.use("/api/*", rateLimit({ store: new MemoryStore(), policies: [{ name: "per-ip", limit: 100, period: "1m" }], key: (c) => c.req.header("x-api-key") }));
 */
export * from "./http/middleware.js";
export { MemoryStore } from "./stores/memory.js";
export { DurableObjectStore } from "./stores/durable-object.js";
export type { Limiter, StoreHealth } from "./limiter.js";
