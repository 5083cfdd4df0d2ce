import type { AcquireResult, Policy } from "../core/types.js";

/** Tries to take a lease now; `queued` is false only for the head of the queue. */
export type TryAcquire = (policies: readonly Policy[], leaseMs: number | undefined) => AcquireResult;

interface Waiter {
  policies: readonly Policy[];
  leaseMs: number | undefined;
  resolve: (result: AcquireResult) => void;
  timer: ReturnType<typeof setTimeout>;
}

/**
 * FIFO waiting for concurrency leases within one process (a Durable Object, or the
 * memory store for one key). A newcomer never passes a waiter; the head is retried
 * whenever a lease is released and when the next lease expires. No polling: one timer
 * for the next expiry, one per waiter for its deadline.
 */
export class LeaseQueue {
  private readonly tryAcquire: TryAcquire;
  /** When the next held lease of these policies expires (ms epoch), if any. */
  private readonly nextExpiryMs: (policies: readonly Policy[]) => number | undefined;
  private readonly nowMs: () => number;
  private readonly waiters: Waiter[] = [];
  private expiryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    tryAcquire: TryAcquire,
    nextExpiryMs: (policies: readonly Policy[]) => number | undefined,
    nowMs: () => number = Date.now,
  ) {
    this.tryAcquire = tryAcquire;
    this.nextExpiryMs = nextExpiryMs;
    this.nowMs = nowMs;
  }

  get size(): number {
    return this.waiters.length;
  }

  /** Adds one to `count(name)` for each concurrency policy each waiter waits for. */
  countWaiters(count: (policyName: string) => void): void {
    for (const waiter of this.waiters) for (const policy of waiter.policies) if (policy.algorithm === "concurrency") count(policy.name);
  }

  /** Names of the concurrency policies somebody is waiting for: checks must not pass them. */
  queuedPolicyNames(): Set<string> {
    const names = new Set<string>();
    for (const waiter of this.waiters) for (const policy of waiter.policies) if (policy.algorithm === "concurrency") names.add(policy.name);
    return names;
  }

  acquire(policies: readonly Policy[], maxWaitMs: number, leaseMs: number | undefined): Promise<AcquireResult> {
    if (this.waiters.length === 0) {
      const result = this.tryAcquire(policies, leaseMs);
      if (result.acquired || maxWaitMs <= 0) return Promise.resolve(result);
    } else if (maxWaitMs <= 0) {
      return Promise.resolve({ acquired: false, retryAfterMs: this.retryAfterMs(policies) });
    }
    return new Promise<AcquireResult>((resolve) => {
      const waiter: Waiter = {
        policies,
        leaseMs,
        resolve,
        timer: setTimeout(() => this.giveUp(waiter), maxWaitMs),
      };
      this.waiters.push(waiter);
      this.armExpiryTimer();
    });
  }

  /** Call after anything frees a slot (release, reset, expiry): serves waiters in order. */
  wake(): void {
    while (this.waiters.length > 0) {
      const head = this.waiters[0]!;
      const result = this.tryAcquire(head.policies, head.leaseMs);
      if (!result.acquired) break;
      this.waiters.shift();
      clearTimeout(head.timer);
      head.resolve(result);
    }
    this.armExpiryTimer();
  }

  /** Ends every wait (the store is shutting down). */
  close(): void {
    for (const waiter of this.waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.resolve({ acquired: false, retryAfterMs: null });
    }
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
  }

  private giveUp(waiter: Waiter): void {
    const index = this.waiters.indexOf(waiter);
    if (index < 0) return;
    this.waiters.splice(index, 1);
    waiter.resolve({ acquired: false, retryAfterMs: this.retryAfterMs(waiter.policies) });
    // The one that left may have been the head blocking others.
    if (index === 0) this.wake();
  }

  private retryAfterMs(policies: readonly Policy[]): number {
    const expiryMs = this.nextExpiryMs(policies);
    return expiryMs === undefined ? 1 : Math.max(1, Math.ceil(expiryMs - this.nowMs()));
  }

  private armExpiryTimer(): void {
    if (this.expiryTimer) clearTimeout(this.expiryTimer);
    this.expiryTimer = undefined;
    const head = this.waiters[0];
    if (!head) return;
    const expiryMs = this.nextExpiryMs(head.policies);
    if (expiryMs === undefined) return;
    this.expiryTimer = setTimeout(() => this.wake(), Math.max(0, Math.ceil(expiryMs - this.nowMs())) + 1);
  }
}
