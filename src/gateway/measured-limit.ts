import type { Limiter } from "../core/limiter.js";
import type { Policy } from "../core/types.js";
import { joinFields, peekRequest, settler, splitOf } from "../http/count-limit.js";
import { type HeldLease, type LimitContext, type LimitPlan, limitRequest, resolvedPlan } from "../http/limit.js";
import type { RouteCounting } from "./counting.js";
import type { EstimateSource } from "./estimate.js";
import { type Charges, type Measure, type UsageCost, reservationsOf } from "./measures.js";

/**
 * How a route whose policies each charge their own measure is limited (docs/counting.md,
 * "Measures"): one store call decides every rate policy of the stack, each at its own cost
 * (CheckOptions.costs), all-or-nothing in the store:
 * - `requests`: charged 1, as a plain route's;
 * - with reservations (an `estimate`): a measured policy reserves its measure's estimate,
 *   settled on the answer (the difference refunded or debited, as count-reserve.ts);
 * - without: a measured policy is peeked in the same call (cost 0: a cost-1 request must fit,
 *   nothing is consumed), then debited its measure on the answer (count-limit.ts).
 * A refusal consumed nothing from any policy, so nothing is given back; a burst admits at
 * most what each policy holds. When no policy is charged before the answer (no `requests`
 * policy, no estimate) the call is the peek of count-limit.ts. The answer settles every
 * measure in one debit (or debitLater: one carried op). Concurrency policies take their lease
 * last; a refused lease gives back what the check consumed, in one refund.
 */
export type MeasuredOutcome =
  | { admitted: false; response: Response }
  | {
      admitted: true;
      /** The RateLimit fields before the answer: the rate policies', then the lease's. */
      headers: Record<string, string>;
      lease?: HeldLease;
      /** Charges every policy its measure of the answer (`requests` policies are done); never rejects. */
      settle(charges: Charges, later: boolean): Promise<unknown> | undefined;
    };

/** Each rate policy's measure, in stack order, made once per stack (a plan lives as long as its route). */
const measuresByStack = new WeakMap<readonly Policy[], Measure[]>();
function measuresOf(rated: readonly Policy[], cost: UsageCost): Measure[] {
  let measures = measuresByStack.get(rated);
  if (!measures) measuresByStack.set(rated, (measures = rated.map((policy) => cost.measureOf.get(policy.name) ?? cost.measure)));
  return measures;
}

/** What each rate policy is charged before the answer: 1 for `requests`, its measure's reservation, or 0 (peeked). */
function costsBefore(measures: readonly Measure[], reservations: Charges | undefined): number[] {
  return measures.map((measure) => (measure === "requests" ? 1 : reservations ? reservations[measure] : 0));
}

/** `reservations`: what each measure reserves (an estimate), undefined to peek. */
export function measuredRequest(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext, cost: UsageCost, reservations: Charges | undefined): Promise<MeasuredOutcome> {
  if (plan.overrides) {
    // Overrides first: the check and its settle see the same policies.
    const resolved = resolvedPlan(plan, key, context);
    return resolved instanceof Promise ? resolved.then((one) => measuredRequest(limiter, key, one, context, cost, reservations)) : measuredRequest(limiter, key, resolved, context, cost, reservations);
  }
  const { rated, leased } = splitOf(plan.policies);
  const measures = measuresOf(rated, cost);
  const before = costsBefore(measures, reservations);
  if (!before.some((one) => one > 0)) {
    // Nothing charged before the answer: the peek of a counted route (its 429, dry run and
    // block), its lease, and every measure debited in one call on the answer.
    return peekRequest(limiter, key, plan, context).then((outcome): MeasuredOutcome => {
      if (!outcome.admitted) return outcome;
      const settle = (charges: Charges, later: boolean) => settled(outcome.settle(measures.map((measure) => charges[measure]), later));
      return outcome.lease ? { admitted: true, headers: outcome.headers, lease: outcome.lease, settle } : { admitted: true, headers: outcome.headers, settle };
    });
  }
  // A refund of what the check consumed goes back to the window it was consumed in.
  const spentAtMs = Date.now();
  return limitRequest(limiter, key, { ...plan, policies: rated }, { ...context, cost: 1, costs: before }).then((checked): MeasuredOutcome | Promise<MeasuredOutcome> => {
    if (!checked.admitted) return checked;
    // A check that never landed (the store failed open, a dry run's failed) consumed nothing:
    // its settle charges every measure whole, and a refused lease has nothing to give back.
    const landed = checked.decision !== undefined && !checked.decision.failedOpen;
    const debit = settler(limiter, key, rated, plan, context, checked.headers, spentAtMs);
    const settle = (charges: Charges, later: boolean) => settled(debit(measures.map((measure, i) => (measure === "requests" ? 0 : charges[measure] - (landed ? before[i]! : 0))), later));
    if (leased.length === 0) return { admitted: true, headers: checked.headers, settle };
    return limitRequest(limiter, key, { ...plan, policies: leased }, { ...context, cost: 1 }).then((leasing): MeasuredOutcome => {
      if (!leasing.admitted) {
        // All-or-nothing: the lease refused the request, so what the check consumed goes back, in one refund.
        if (landed) {
          const refunded = limiter.debit(key, rated, before.map((one) => -one), spentAtMs).catch((error: unknown) => context.log({ event: "refund-failed", route: context.label, key, cost: before.map((one) => -one), error: String(error) }));
          context.defer?.(refunded);
        }
        return leasing;
      }
      return { admitted: true, headers: joinFields(checked.headers, leasing.headers), lease: leasing.lease, settle };
    });
  });
}

/** A settle's answer as MeasuredOutcome.settle gives it: the promise to wait on, or none. */
function settled(fields: Record<string, string> | Promise<Record<string, string>>): Promise<unknown> | undefined {
  return fields instanceof Promise ? fields : undefined;
}

/**
 * What each measure reserves for a request, from the route's estimate (one number, or parts),
 * each part read by `read` as a plain route's estimate is; undefined without an estimate (peek).
 */
export function reservationsFor(counting: RouteCounting, cost: UsageCost, read: (source: EstimateSource, field: string) => number, field: string): Charges | undefined {
  if (counting.estimates) return reservationsOf({ input: read(counting.estimates.input, `${field}.estimate.input`), output: read(counting.estimates.output, `${field}.estimate.output`) }, cost);
  return counting.estimate ? reservationsOf(read(counting.estimate, `${field}.estimate`), cost) : undefined;
}
