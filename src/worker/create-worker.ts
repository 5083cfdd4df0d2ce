import { parseGatewayConfig } from "../gateway/config.js";
import { createGateway } from "../gateway/gateway.js";
import { type CreateWorkerOptions, type SpillwayWorker, buildWorker } from "./build-worker.js";

export type { CreateWorkerOptions, SpillwayWorker } from "./build-worker.js";

/**
 * Builds the Spillway Worker from your config (the parsed contents of spillway.config.json).
 * The config is validated here, when the Worker loads: a bad one throws a ValidationError
 * naming the field (`spillway check --config FILE` finds the same error before a deploy).
 *
 * @example
 * import { createWorker, LimiterObject } from "spillway/worker";
 * import config from "../spillway.config.json";
 *
 * const spillway = createWorker(config);
 * export { LimiterObject };
 * export const SpillwayRpc = spillway.Rpc;
 * export default { fetch: spillway.fetch };
 */
export function createWorker(input: unknown, options: CreateWorkerOptions = {}): SpillwayWorker {
  return buildWorker(input, options, { parse: parseGatewayConfig, create: createGateway });
}
