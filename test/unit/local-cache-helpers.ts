import type { AcquireOptions, AcquireResult, CheckOptions, Decision, ExtendResult, Policy, ReleaseResult } from "../../src/core/types.js";
import { type Limiter, type StoreHealth, StoreUnavailableError } from "../../src/limiter.js";

/** What happens to one call: it goes through, fails before the store decides, or decides and then loses its answer. */
export type CallOutcome = "ok" | "fail-before" | "fail-after";

/**
 * The authoritative store with failures injected (not a mock: every call that gets through
 * is decided by the real store). Counts the units the store really debited, answered or not.
 */
export class FlakyStore implements Limiter {
  readonly kind = "flaky";
  calls = 0;
  debitedUnits = 0;
  private readonly store: Limiter;
  private readonly next: () => CallOutcome;

  constructor(store: Limiter, next: () => CallOutcome) {
    this.store = store;
    this.next = next;
  }

  async check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    this.calls++;
    const outcome = this.next();
    if (outcome === "fail-before") throw new StoreUnavailableError("injected: store unreachable");
    const decision = await this.store.check(key, policies, options);
    if (decision.allowed) this.debitedUnits += options.cost;
    if (outcome === "fail-after") throw new StoreUnavailableError("injected: answer lost");
    return decision;
  }
  peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    return this.store.peek(key, policies);
  }
  reset(key: string, policies: readonly Policy[]): Promise<void> {
    return this.store.reset(key, policies);
  }
  acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
    return this.store.acquire(key, policies, options);
  }
  release(key: string, policies: readonly Policy[], leaseId: string): Promise<ReleaseResult> {
    return this.store.release(key, policies, leaseId);
  }
  extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs?: number): Promise<ExtendResult> {
    return this.store.extend(key, policies, leaseId, leaseMs);
  }
  health(): Promise<StoreHealth> {
    return this.store.health();
  }
}
