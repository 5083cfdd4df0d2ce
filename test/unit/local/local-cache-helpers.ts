import type { CheckOptions, Decision, Policy } from "../../../src/core/types.js";
import { ForwardingLimiter, type Limiter, StoreUnavailableError } from "../../../src/core/limiter.js";

/** What happens to one call: it goes through, fails before the store decides, or decides and then loses its answer. */
export type CallOutcome = "ok" | "fail-before" | "fail-after";

/**
 * The authoritative store with failures injected (not a mock: every call that gets through
 * is decided by the real store). Counts the units the store really debited, answered or not.
 */
export class FlakyStore extends ForwardingLimiter {
  calls = 0;
  debitedUnits = 0;
  private readonly next: () => CallOutcome;

  constructor(store: Limiter, next: () => CallOutcome) {
    super(store);
    this.next = next;
  }

  override async check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    this.calls++;
    const outcome = this.next();
    if (outcome === "fail-before") throw new StoreUnavailableError("injected: store unreachable");
    const decision = await this.store.check(key, policies, options);
    if (decision.allowed) this.debitedUnits += options.cost;
    if (outcome === "fail-after") throw new StoreUnavailableError("injected: answer lost");
    return decision;
  }
}
