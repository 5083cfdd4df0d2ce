import type { KeyLimiterObject } from "../stores/durable-object.js";

/** Bindings of the Spillway Worker (wrangler.toml). */
export interface Env {
  LIMITER: DurableObjectNamespace<KeyLimiterObject>;
  /** Bearer token for /v1 (a secret; `npm start` sets a local one). */
  SPILLWAY_TOKEN?: string;
}
