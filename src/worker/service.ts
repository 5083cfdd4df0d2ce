import rawConfig from "../../spillway.config.json";
import { parseConfig } from "../config.js";
import { SpillwayService } from "../service.js";
import { DurableObjectStore } from "../stores/durable-object.js";
import type { Env } from "./env.js";

/** The bundled config, validated when the Worker loads: a bad config fails the deploy, not a request. */
export const config = parseConfig(rawConfig);

const services = new WeakMap<object, SpillwayService>();

/** One service per LIMITER binding (bindings are stable for an isolate's life). */
export function serviceFor(env: Env): SpillwayService {
  let service = services.get(env.LIMITER);
  if (!service) {
    service = new SpillwayService(new DurableObjectStore(env.LIMITER), config);
    services.set(env.LIMITER, service);
  }
  return service;
}

/** The expected /v1 bearer token. */
export const tokenOf = (env: unknown) => (env as Env).SPILLWAY_TOKEN;
