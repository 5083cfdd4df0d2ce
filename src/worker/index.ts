/**
 * `spillway/worker`: Spillway as a Cloudflare Worker, built from your config.
 *
 * @example
 * import { createWorker, LimiterObject, OverridesObject } from "spillway/worker";
 * import config from "../spillway.config.json";
 *
 * const spillway = createWorker(config);
 * export { LimiterObject, OverridesObject };
 * export const SpillwayRpc = spillway.Rpc;
 * export default { fetch: spillway.fetch };
 */
export { createWorker, type CreateWorkerOptions, type SpillwayWorker } from "./create-worker.js";
export { LimiterObject } from "./limiter-object.js";
export { OverridesObject } from "./overrides-object.js";
export { SpillwayEntrypoint, type SpillwayRpc } from "./entrypoint.js";
export { cloudflareClientIp } from "./client-ip.js";
export { DurableObjectStore } from "../stores/durable-object.js";
export type { Env } from "./env.js";
export { LocalCache, type LocalCacheOptions } from "../local/local-cache.js";
export { ForwardingLimiter } from "../core/limiter.js";
