import type { Decision, PolicyDecision } from "../core/types.js";
import type { ProtoStruct } from "./types.js";
import type { CounterLimit, Planned } from "./plan.js";
import { UNITS, UNIT_MS, type UnitName } from "./types.js";

/** RateLimitResponse.DescriptorStatus, as proto-loader encodes it (the proto's field names). */
export interface RlsStatus {
  code: "OK" | "OVER_LIMIT";
  current_limit?: { name: string; requests_per_unit: number; unit: number };
  limit_remaining: number;
  duration_until_reset?: { seconds: number; nanos: number };
}

/** RateLimitResponse, as far as Spillway fills it in. */
export interface RlsAnswer {
  overall_code: "OK" | "OVER_LIMIT";
  statuses: RlsStatus[];
  response_headers_to_add?: { key: string; value: string }[];
  /** RESPONSE_DYNAMIC_METADATA (src/rls/metadata.ts). */
  dynamic_metadata?: ProtoStruct;
}

/** The store decision for the stack a descriptor was part of. */
export interface DescriptorResult {
  decision: Decision;
}

/** A stack's decision for one of its policies, by (stored) name: a stack holds a handful, so a scan beats building a Map per decision. */
export function decidedFor(decision: Decision, name: string): PolicyDecision | undefined {
  const policies = decision.policies;
  for (let i = 0; i < policies.length; i++) if (policies[i]!.policy === name) return policies[i];
  return undefined;
}

const MAX_UINT32 = 4_294_967_295;

/**
 * One descriptor's status. `overLimit` is its own outcome (the metrics count it); `code` is
 * what the caller sees: OK for a shadow_mode rule whatever happened. A descriptor with several
 * limits reports the one that decided: the denied one that frees up last, else the one with
 * the fewest requests left. duration_until_reset is when the reported limit admits again when
 * over it, else when it is back to full, in whole seconds rounded up (the reference's are whole too).
 */
export function statusOf(plan: Planned, result: DescriptorResult | undefined, nowMs: number): { status: RlsStatus; overLimit: boolean } {
  if (plan.kind === "none") return { status: { code: "OK", limit_remaining: 0 }, overLimit: false };
  // The reference's answer for unlimited: OK with the most a uint32 holds left.
  if (plan.kind === "unlimited") return { status: { code: "OK", limit_remaining: MAX_UINT32 }, overLimit: false };
  if (plan.kind === "block") {
    const status: RlsStatus = {
      code: plan.shadow ? "OK" : "OVER_LIMIT",
      current_limit: { name: plan.ruleName ?? "", requests_per_unit: 0, unit: plan.unit },
      limit_remaining: 0,
      duration_until_reset: seconds(untilUnitBoundaryMs(plan.unit, nowMs)),
    };
    return { status, overLimit: true };
  }
  const chosen = reported(plan.limits, result);
  if (!chosen) {
    const { limit } = plan.limits[0]!;
    return { status: { code: "OK", current_limit: currentLimit(plan.limits[0]!), limit_remaining: limit.requestsPerUnit }, overLimit: false };
  }
  const { decided, counter } = chosen;
  const overLimit = !decided.allowed;
  const untilMs = overLimit ? (decided.retryAfterMs ?? decided.resetMs) : decided.resetMs;
  const status: RlsStatus = {
    code: overLimit && !plan.shadow ? "OVER_LIMIT" : "OK",
    current_limit: currentLimit(counter),
    limit_remaining: Math.min(MAX_UINT32, Math.max(0, decided.remaining)),
    duration_until_reset: seconds(untilMs),
  };
  return { status, overLimit };
}

function reported(limits: readonly CounterLimit[], result: DescriptorResult | undefined): { decided: PolicyDecision; counter: CounterLimit } | undefined {
  if (!result) return undefined;
  let chosen: { decided: PolicyDecision; counter: CounterLimit } | undefined;
  for (const counter of limits) {
    const decided = decidedFor(result.decision, counter.stored.name);
    if (!decided) continue;
    if (!chosen) chosen = { decided, counter };
    else if (decided.allowed ? chosen.decided.allowed && decided.remaining < chosen.decided.remaining : chosen.decided.allowed || rank(decided) > rank(chosen.decided)) chosen = { decided, counter };
  }
  return chosen;
}

function rank(decided: PolicyDecision): number {
  return decided.retryAfterMs === null ? Number.POSITIVE_INFINITY : decided.retryAfterMs;
}

function currentLimit(counter: CounterLimit): NonNullable<RlsStatus["current_limit"]> {
  return counter.currentLimit;
}

function seconds(ms: number): { seconds: number; nanos: number } {
  return { seconds: Math.ceil(Math.max(0, ms) / 1000), nanos: 0 };
}

/** Time to the end of the current aligned window of a unit (what the reference reports for any limit). */
function untilUnitBoundaryMs(unit: number, nowMs: number): number {
  const name = (Object.keys(UNITS) as UnitName[]).find((candidate) => UNITS[candidate] === unit);
  if (!name) return 0;
  const lengthMs = UNIT_MS[name];
  return lengthMs - (nowMs % lengthMs);
}
