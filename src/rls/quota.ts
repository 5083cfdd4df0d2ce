import type { Planned } from "./plan.js";
import { type DescriptorResult, type RlsStatus, statusOf } from "./status.js";

/**
 * quota_mode, as envoyproxy/ratelimit means it: a quota descriptor over its limit does not
 * refuse the request by itself. The answer is OVER_LIMIT when a plain descriptor is over, or
 * when every quota descriptor of the request is over; each descriptor's status still says
 * OVER_LIMIT when it is over. Under the global QUOTA_MODE every descriptor but an unlimited one
 * is a quota descriptor, one that matched nothing (or a shadow one) counting as one that
 * passed, as in the reference.
 */
export function isQuota(plan: Planned, globalQuota: boolean): boolean {
  if (plan.kind === "unlimited") return false;
  return globalQuota || ((plan.kind === "limit" || plan.kind === "block") && plan.quota);
}

/** Whether any descriptor of the request is a quota descriptor (the usual request has none: nothing more to do). */
export function hasQuota(planned: readonly Planned[], globalQuota: boolean): boolean {
  if (globalQuota) return true;
  for (const plan of planned) if ((plan.kind === "limit" || plan.kind === "block") && plan.quota) return true;
  return false;
}

/** The overall code from the statuses (shadow descriptors already say OK), with quota_mode's rule. */
export function overallOverLimit(planned: readonly Planned[], statuses: readonly RlsStatus[], globalQuota: boolean): boolean {
  let quotaCount = 0;
  let quotaOver = 0;
  for (let i = 0; i < planned.length; i++) {
    const over = statuses[i]!.code === "OVER_LIMIT";
    if (!isQuota(planned[i]!, globalQuota)) {
      if (over) return true;
      continue;
    }
    quotaCount++;
    if (over) quotaOver++;
  }
  return quotaCount > 0 && quotaOver === quotaCount;
}

/**
 * After the store refused the stack of `pending` descriptors: when the request is admitted all
 * the same (no plain descriptor over, some quota descriptor with room), the descriptors still to
 * count: `pending` without the quota descriptors that are over and without those already
 * consumed. Undefined when the refusal stands (the answer is OVER_LIMIT, nothing consumed) or
 * nothing is left to count. Each round drops at least one descriptor, so the rounds end.
 */
export function afterQuotaRefusal(
  planned: readonly Planned[],
  results: readonly (DescriptorResult | undefined)[],
  pending: readonly number[],
  consumed: ReadonlySet<number>,
  globalQuota: boolean,
  nowMs: number,
): number[] | undefined {
  const statuses = planned.map((plan, index) => statusOf(plan, results[index], nowMs).status);
  if (overallOverLimit(planned, statuses, globalQuota)) return undefined;
  const next: number[] = [];
  let dropped = false;
  for (const index of pending) {
    if (consumed.has(index)) continue;
    if (isQuota(planned[index]!, globalQuota) && statuses[index]!.code === "OVER_LIMIT") dropped = true;
    else next.push(index);
  }
  return dropped && next.length > 0 ? next : undefined;
}
