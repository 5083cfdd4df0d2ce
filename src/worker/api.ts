/**
 * `spillway/worker/api`: the Spillway Worker for the /v1 decision API alone (no gateway code in
 * the bundle); `spillway/worker` has the same exports with `createWorker`, which serves routes too.
 */
export { createApiWorker } from "./api-worker.js";
export { type CreateWorkerOptions, type SpillwayWorker } from "./build-worker.js";
export { LimiterObject } from "./limiter-object.js";
export { OverridesObject } from "./overrides-object.js";
export { SpillwayEntrypoint, type SpillwayRpc } from "./entrypoint.js";
export { cloudflareClientIp } from "./client-ip.js";
export { DurableObjectStore } from "../stores/durable-object.js";
export type { Env } from "./env.js";
export { LocalCache, type LocalCacheOptions } from "../local/local-cache.js";
export { ForwardingLimiter } from "../core/limiter.js";
