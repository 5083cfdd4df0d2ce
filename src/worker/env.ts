import type { KeyLimiterObject } from "../stores/durable-object.js";
import type { OverridesObjectRpc } from "../stores/durable-object-overrides.js";

/** Bindings of the Spillway Worker (wrangler.toml). */
export interface Env {
  LIMITER: DurableObjectNamespace<KeyLimiterObject>;
  /**
   * The OverridesObject that holds runtime overrides (PUT /v1/overrides). Optional: without it,
   * config overrides still apply and /v1/overrides answers 503 saying to add it.
   */
  OVERRIDES?: DurableObjectNamespace<OverridesObjectRpc>;
  /** "1" or "true": every gateway route in dry-run (a first rollout in front of real traffic). */
  SPILLWAY_DRY_RUN?: string;
  /** Bearer token for /v1 (a secret; `npm start` sets a local one). */
  SPILLWAY_TOKEN?: string;
  /** Optional Workers Analytics Engine dataset: one data point per decision (see analytics.ts). */
  SPILLWAY_ANALYTICS?: AnalyticsEngineDataset;
  /** Share of decisions written to SPILLWAY_ANALYTICS, above 0 and at most 1 (default 1). */
  SPILLWAY_ANALYTICS_SAMPLE_RATE?: string;
  /** "false" drops the log line of each denial (fail-opens and store errors are still logged). */
  SPILLWAY_LOG_DENIALS?: string;
}
