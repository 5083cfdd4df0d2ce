import { rateLimitHeaders } from "../core/headers.js";
import type { Decision, Policy, PolicyDecision } from "../core/types.js";
import type { Planned } from "./plan.js";
import { type DescriptorResult, decidedFor } from "./status.js";

/** Spillway's RateLimit fields over every enforced limit of the request, labelled as written. */
export function headersOf(planned: readonly Planned[], results: readonly DescriptorResult[], allowed: boolean): { key: string; value: string }[] | undefined {
  const policies: Policy[] = [];
  const decisions: PolicyDecision[] = [];
  planned.forEach((plan, index) => {
    const result = results[index];
    if (plan.kind !== "limit" || plan.shadow || !result) return;
    for (const { stored, limit } of plan.limits) {
      const decided = decidedFor(result.decision, stored.name);
      if (!decided) continue;
      policies.push(limit.policy);
      decisions.push({ ...decided, policy: limit.policy.name });
    }
  });
  if (decisions.length === 0) return undefined;
  let retryAfterMs: number | null = 0;
  if (!allowed) for (const decided of decisions) if (!decided.allowed) retryAfterMs = decided.retryAfterMs === null || retryAfterMs === null ? null : Math.max(retryAfterMs, decided.retryAfterMs);
  if (!allowed && retryAfterMs === 0) retryAfterMs = null; // refused by a requests_per_unit: 0 rule: no time helps
  const top = decisions[0]!;
  const view: Decision = { ...top, allowed, retryAfterMs, waitMs: 0, policies: decisions };
  return Object.entries(rateLimitHeaders(view, policies)).map(([key, value]) => ({ key, value }));
}
