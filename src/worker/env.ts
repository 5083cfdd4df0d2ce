import type { KeyLimiterObject } from "../stores/durable-object.js";

/** Bindings of the Spillway Worker (wrangler.toml). */
export interface Env {
  LIMITER: DurableObjectNamespace<KeyLimiterObject>;
  /** Bearer token for /v1 (a secret; `npm start` sets a local one). */
  SPILLWAY_TOKEN?: string;
  /** Optional Workers Analytics Engine dataset: one data point per decision (see analytics.ts). */
  SPILLWAY_ANALYTICS?: AnalyticsEngineDataset;
  /** Share of decisions written to SPILLWAY_ANALYTICS, above 0 and at most 1 (default 1). */
  SPILLWAY_ANALYTICS_SAMPLE_RATE?: string;
  /** "false" drops the log line of each denial (fail-opens and store errors are still logged). */
  SPILLWAY_LOG_DENIALS?: string;
}
