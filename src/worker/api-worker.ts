import { type CreateWorkerOptions, type SpillwayWorker, buildWorker } from "./build-worker.js";

/**
 * The Spillway Worker without a gateway: the /v1 API, RPC and /healthz, for a config with no
 * `origin` (one with an origin is refused, naming it). It bundles none of the gateway's code,
 * so the Worker `spillway init` writes is the smaller for it (docs/worker.md, "Size").
 *
 * @example
 * import { createApiWorker, LimiterObject, OverridesObject } from "spillway/worker/api";
 * import config from "../spillway.config.json";
 *
 * const spillway = createApiWorker(config);
 * export { LimiterObject, OverridesObject };
 * export const SpillwayRpc = spillway.Rpc;
 * export default { fetch: spillway.fetch };
 */
export function createApiWorker(input: unknown, options: CreateWorkerOptions = {}): SpillwayWorker {
  return buildWorker(input, options, undefined);
}
