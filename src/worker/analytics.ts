import { ValidationError } from "../core/validation.js";
import type { DecisionEvent, SpillwayObserver } from "../observe/observer.js";

/**
 * One Analytics Engine data point per decision (sampled):
 * - index1: the policy that decided (the one that refused, when one did)
 * - blob1 policy · blob2 outcome (`allowed`, `denied`, `failed_open`, `error`) · blob3 source
 *   (`api` or the gateway route's index) · blob4 store · blob5 the stack's policies, comma-joined
 * - double1 the store round trip in ms · double2 the decisions this point stands for (1 / sample rate)
 */
export function analyticsObserver(dataset: AnalyticsEngineDataset, sampleRate = 1, random: () => number = Math.random): SpillwayObserver {
  const weight = 1 / sampleRate;
  return {
    decision(event: DecisionEvent) {
      if (sampleRate < 1 && random() >= sampleRate) return;
      const denied = event.results?.find((result) => !result.allowed);
      const policy = denied?.policy ?? event.policy;
      dataset.writeDataPoint({
        indexes: [policy],
        blobs: [policy, event.outcome, event.source, event.store, event.policies.map((policy) => policy.name).join(",")],
        doubles: [event.durationMs, weight],
      });
    },
  };
}

/** SPILLWAY_ANALYTICS_SAMPLE_RATE: a number above 0 and at most 1 (default 1: every decision). */
export function parseSampleRate(value: string | undefined): number {
  if (value === undefined || value === "") return 1;
  const rate = Number(value);
  if (!Number.isFinite(rate) || rate <= 0 || rate > 1) {
    throw new ValidationError("SPILLWAY_ANALYTICS_SAMPLE_RATE", `must be a number above 0 and at most 1 (the share of decisions written), got ${JSON.stringify(value)}`);
  }
  return rate;
}

/** SPILLWAY_LOG_DENIALS: "true" (default) or "false". */
export function parseLogDenials(value: string | undefined): boolean {
  if (value === undefined || value === "" || value === "true") return true;
  if (value === "false") return false;
  throw new ValidationError("SPILLWAY_LOG_DENIALS", `must be "true" or "false", got ${JSON.stringify(value)}`);
}
