import type { Limiter } from "../core/limiter.js";
import type { Policy } from "../core/types.js";
import { type CountedOutcome, type Settle, joinFields, peekRequest, settler, splitOf } from "../http/count-limit.js";
import { reserveRequest } from "../http/count-reserve.js";
import { type HeldLease, type LimitContext, type LimitPlan, limitRequest, resolvedPlan } from "../http/limit.js";
import type { RouteCounting } from "./counting.js";
import type { EstimateSource } from "./estimate.js";
import { type Charges, type Measure, type UsageCost, reservationsOf } from "./measures.js";

/**
 * How a route whose policies each charge their own measure is limited (docs/counting.md,
 * "Measures"). The rate policies are grouped by measure; each group is decided on its own,
 * all groups at once:
 * - `requests`: a real check at cost 1, as a plain route's;
 * - with reservations (an `estimate`): the group's reservation is checked and consumed
 *   (count-reserve.ts), settled on the answer;
 * - without: peeked, every such group in one call (a peek costs nothing), each debited its own
 *   measure on the answer (count-limit.ts).
 * All or nothing: when one group refuses, every other group's consumption is given back (a
 * refund, count-reserve.ts) and the request gets that group's 429. Each group's check is
 * atomic in the store, so a burst admits at most what each group holds; a refused request's
 * give-back can only make a concurrent one refused, never let one more in. Concurrency
 * policies take their lease last; a refused lease gives every group's consumption back.
 */
export type MeasuredOutcome =
  | { admitted: false; response: Response }
  | {
      admitted: true;
      /** The RateLimit fields before the answer: every group's, then the lease's. */
      headers: Record<string, string>;
      lease?: HeldLease;
      /** Charges every group its measure of the answer (`requests` groups are done); never rejects. */
      settle(charges: Charges, later: boolean): Promise<unknown> | undefined;
    };

interface Group {
  measure: Measure;
  policies: Policy[];
}

/** The stack's rate policies by measure, in stack order of each measure's first policy. */
function groupsOf(rated: readonly Policy[], cost: UsageCost): Group[] {
  const groups: Group[] = [];
  for (const policy of rated) {
    const measure = cost.measureOf.get(policy.name) ?? cost.measure;
    const group = groups.find((one) => one.measure === measure);
    if (group) group.policies.push(policy);
    else groups.push({ measure, policies: [policy] });
  }
  return groups;
}

/** One store call's outcome: what it consumed of which policies (to give back), and how each measure it covers settles. */
interface Decided {
  outcome: CountedOutcome;
  policies: readonly Policy[];
  consumed: number;
  settles: Array<[Measure, Settle]>;
}

/** `requests`: known before forwarding, checked and consumed at 1; nothing to settle, a refund of the one unit to give back. */
function checkRequests(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext, group: Group): Promise<Decided> {
  return limitRequest(limiter, key, { ...plan, policies: group.policies }, { ...context, cost: 1 }).then((outcome) => ({
    policies: group.policies,
    consumed: 1,
    settles: [],
    outcome: outcome.admitted ? { admitted: true, headers: outcome.headers, settle: () => outcome.headers } : outcome,
  }));
}

function reserveGroup(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext, group: Group, reservation: number): Promise<Decided> {
  return reserveRequest(limiter, key, { ...plan, policies: group.policies }, context, reservation).then((outcome) => ({
    policies: group.policies,
    consumed: reservation,
    outcome,
    settles: outcome.admitted ? [[group.measure, outcome.settle]] : [],
  }));
}

/** Without reservations every measured group is peeked in one call (a peek costs nothing), then debited its own measure. */
function peekGroups(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext, groups: readonly Group[]): Promise<Decided> {
  const policies = groups.flatMap((group) => group.policies);
  return peekRequest(limiter, key, { ...plan, policies }, context).then((outcome) => ({
    policies,
    consumed: 0,
    outcome,
    settles: outcome.admitted ? groups.map((group): [Measure, Settle] => [group.measure, settler(limiter, key, group.policies, plan, context, outcome.headers)]) : [],
  }));
}

/** Gives back what admitted calls consumed (a request refused elsewhere). */
function giveBack(limiter: Limiter, key: string, decided: readonly Decided[], context: LimitContext): void {
  for (const one of decided) {
    if (!one.outcome.admitted || one.consumed === 0) continue;
    const refunded = limiter.debit(key, one.policies, -one.consumed).catch((error: unknown) => context.log({ event: "refund-failed", route: context.label, key, cost: -one.consumed, error: String(error) }));
    context.defer?.(refunded);
  }
}

/** `reservations`: what each measure reserves (an estimate), undefined to peek. */
export function measuredRequest(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext, cost: UsageCost, reservations: Charges | undefined): Promise<MeasuredOutcome> {
  if (plan.overrides) {
    // Overrides first: every group and its settle see the same policies.
    const resolved = resolvedPlan(plan, key, context);
    return resolved instanceof Promise ? resolved.then((one) => measuredRequest(limiter, key, one, context, cost, reservations)) : measuredRequest(limiter, key, resolved, context, cost, reservations);
  }
  const { rated, leased } = splitOf(plan.policies);
  const groups = groupsOf(rated, cost);
  const measured = groups.filter((group) => group.measure !== "requests");
  const calls = groups.filter((group) => group.measure === "requests").map((group) => checkRequests(limiter, key, plan, context, group));
  if (reservations) for (const group of measured) calls.push(reserveGroup(limiter, key, plan, context, group, reservations[group.measure]));
  else calls.push(peekGroups(limiter, key, plan, context, measured));
  return Promise.all(calls).then((decided): MeasuredOutcome | Promise<MeasuredOutcome> => {
    const refused = decided.find((one) => !one.outcome.admitted);
    if (refused && !refused.outcome.admitted) {
      giveBack(limiter, key, decided, context);
      return { admitted: false, response: refused.outcome.response };
    }
    let headers: Record<string, string> = {};
    for (const one of decided) if (one.outcome.admitted) headers = joinFields(headers, one.outcome.headers);
    const settle = (charges: Charges, later: boolean): Promise<unknown> | undefined => {
      const pending: Promise<unknown>[] = [];
      for (const one of decided) {
        for (const [measure, settle] of one.settles) {
          const settled = settle(charges[measure], later);
          if (settled instanceof Promise) pending.push(settled);
        }
      }
      return pending.length === 0 ? undefined : Promise.all(pending);
    };
    if (leased.length === 0) return { admitted: true, headers, settle };
    return limitRequest(limiter, key, { ...plan, policies: leased }, { ...context, cost: 1 }).then((leasing): MeasuredOutcome => {
      if (!leasing.admitted) {
        giveBack(limiter, key, decided, context);
        return leasing;
      }
      return { admitted: true, headers: joinFields(headers, leasing.headers), lease: leasing.lease, settle };
    });
  });
}

/**
 * What each measure reserves for a request, from the route's estimate (one number, or parts),
 * each part read by `read` as a plain route's estimate is; undefined without an estimate (peek).
 */
export function reservationsFor(counting: RouteCounting, cost: UsageCost, read: (source: EstimateSource, field: string) => number, field: string): Charges | undefined {
  if (counting.estimates) return reservationsOf({ input: read(counting.estimates.input, `${field}.estimate.input`), output: read(counting.estimates.output, `${field}.estimate.output`) }, cost);
  return counting.estimate ? reservationsOf(read(counting.estimate, `${field}.estimate`), cost) : undefined;
}
