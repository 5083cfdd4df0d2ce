import type { LimiterObject } from "./limiter-object.js";

/** Bindings of the Spillway Worker (wrangler.toml). */
export interface Env {
  LIMITER: DurableObjectNamespace<LimiterObject>;
  /** Bearer token for /v1 (a secret; `npm start` sets a local one). */
  SPILLWAY_TOKEN?: string;
}
