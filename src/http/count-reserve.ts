import type { Limiter } from "../core/limiter.js";
import type { DebitCost } from "../core/types.js";
import { type CountedOutcome, joinFields, lessEach, settler, splitOf } from "./count-limit.js";
import { type LimitContext, type LimitPlan, limitRequest, resolvedPlan } from "./limit.js";

/**
 * Reserve, then settle (docs/counting.md): how a counted request with an `estimate` is limited.
 * Before: a real check of the stack's rate policies at cost = estimate, all-or-nothing, so a
 * request whose reservation does not fit is refused (429) before the origin sees it; then the
 * concurrency policies' lease, whose refusal gives the reservation back. After: `settle(cost)`
 * debits cost − estimate: a negative difference is a refund (unused units return to the key),
 * a positive one a debit past the limit, as a peeked route's. Requests in flight together
 * each hold their reservation, so the key overspends by at most the sum of their estimate
 * errors (actual − estimate, where positive).
 *
 * The refund goes to the window the reservation was taken in (Limiter.debit's spentAtMs, read
 * just before the reservation's check): one settled after a fixed window turned gives back
 * nothing (the new window holds its full limit already), a sliding window's goes to the
 * previous window's count, a sliding log's to the bucket the reservation was logged in.
 */
export function reserveRequest(limiter: Limiter, key: string, plan: LimitPlan, context: LimitContext, estimate: number): Promise<CountedOutcome> {
  if (plan.overrides) {
    // Overrides first, as for the peek: the reservation and its settle see the same policies.
    const resolved = resolvedPlan(plan, key, context);
    return resolved instanceof Promise ? resolved.then((one) => reserveRequest(limiter, key, one, context, estimate)) : reserveRequest(limiter, key, resolved, context, estimate);
  }
  const { rated, leased } = splitOf(plan.policies);
  const spentAtMs = Date.now();
  return limitRequest(limiter, key, { ...plan, policies: rated }, { ...context, cost: estimate }).then((reserved): CountedOutcome | Promise<CountedOutcome> => {
    if (!reserved.admitted) return reserved;
    const debit = settler(limiter, key, rated, plan, context, reserved.headers, spentAtMs);
    const decision = reserved.decision;
    // A reservation that never landed (the store failed open, or a dry run's failed) reserved
    // nothing: its settle charges the whole cost, not the difference.
    const landed = decision !== undefined && !decision.failedOpen;
    const settle = (cost: DebitCost, later?: boolean) => debit(landed ? lessEach(cost, estimate) : cost, later);
    if (leased.length === 0) return { admitted: true, headers: reserved.headers, settle, decision };
    return limitRequest(limiter, key, { ...plan, policies: leased }, { ...context, cost: 1 }).then((leasing): CountedOutcome => {
      if (!leasing.admitted) {
        // All-or-nothing: the lease refused the request, so its reservation goes back.
        const refunded = settle(0);
        if (refunded instanceof Promise) context.defer?.(refunded);
        return leasing;
      }
      const withLease = (after: Record<string, string>) => joinFields(after, leasing.headers);
      return {
        admitted: true,
        headers: joinFields(reserved.headers, leasing.headers),
        lease: leasing.lease,
        decision,
        settle: (cost, later) => {
          const settled = settle(cost, later);
          return settled instanceof Promise ? settled.then(withLease) : withLease(settled);
        },
      };
    });
  });
}
