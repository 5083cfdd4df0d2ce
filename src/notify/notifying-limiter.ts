import type { CheckOptions, CreditsChange, CreditsResult, DebitCost, Decision, Policy } from "../core/types.js";
import { chargesAny, consumes, someCost } from "../core/costs.js";
import { ForwardingLimiter, type Limiter } from "../core/limiter.js";
import type { Notifier } from "./notifier.js";

/**
 * A Limiter that shows its notifier every decision of a check or debit, and every credits
 * change, after the store answered: the answer itself passes through unchanged and is never
 * held up by a notice (SPEC §2 "Notify").
 *
 * @example const limiter = new NotifyingLimiter(store, new Notifier({ config: () => config.notify, claim, send }))
 */
export class NotifyingLimiter extends ForwardingLimiter {
  readonly notifier: Notifier;
  readonly debitNow?: (key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number) => Decision;
  readonly debitLater?: (key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number) => Promise<Decision>;
  /** A counted request decided on a peek (count-limit.ts): a denial is told as a check's (an admission's notices come with its debit). */
  override readonly decidedOnPeek: (key: string, policies: readonly Policy[], decision: Decision, durationMs: number) => void;

  constructor(store: Limiter, notifier: Notifier) {
    super(store);
    this.notifier = notifier;
    this.decidedOnPeek = (key, policies, decision, durationMs) => {
      store.decidedOnPeek?.(key, policies, decision, durationMs);
      if (!decision.allowed) notifier.decided(key, decision, true);
    };
    if (store.debitNow) {
      const debitNow = store.debitNow.bind(store);
      this.debitNow = (key, policies, cost, spentAtMs) => {
        const decision = debitNow(key, policies, cost, spentAtMs);
        if (!refundOnly(cost)) notifier.decided(key, decision, false);
        return decision;
      };
    }
    // A debit that rides with the key's next call (the Durable Object store) is told when it lands.
    if (store.debitLater) {
      const debitLater = store.debitLater.bind(store);
      this.debitLater = (key, policies, cost, spentAtMs) =>
        debitLater(key, policies, cost, spentAtMs).then((decision) => {
          if (!refundOnly(cost)) notifier.decided(key, decision, false);
          return decision;
        });
    }
  }

  override check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    const answer = this.store.check(key, policies, options);
    // A peek decides nothing: nothing to tell. Without `notify` (the usual server) the answer
    // is the store's own promise: no extra turn on every decision.
    if (!consumes(options) || !this.notifier.enabled()) return answer;
    return answer.then((decision) => {
      this.notifier.decided(key, decision, true);
      return decision;
    });
  }

  override debit(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Promise<Decision> {
    // A refund (a negative cost) only gives back: it crosses no threshold worth a notice.
    if (refundOnly(cost) || !this.notifier.enabled()) return this.store.debit(key, policies, cost, spentAtMs);
    return this.store.debit(key, policies, cost, spentAtMs).then((decision) => {
      this.notifier.decided(key, decision, false);
      return decision;
    });
  }

  override credits(key: string, policy: Policy, change: CreditsChange): Promise<CreditsResult> {
    return this.store.credits(key, policy, change).then((result) => {
      this.notifier.creditsChanged(key, policy.name);
      return result;
    });
  }
}

/** A debit that only gives back (every cost negative): it crosses no threshold worth a notice; a 0 still reports the state. */
function refundOnly(cost: DebitCost): boolean {
  return !chargesAny(cost) && someCost(cost, (one) => one < 0);
}
