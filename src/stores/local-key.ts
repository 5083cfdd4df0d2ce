import type { StoredState } from "../core/algorithms.js";
import { storedFreshAtMs } from "../core/algorithms.js";
import type { StateChange } from "../core/decision.js";
import { concurrencyPolicies, stackLeaseMs } from "../core/concurrency.js";
import { KeyState } from "../core/key-state.js";
import type { CreditsOutcome } from "../core/credits.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, DebitCost, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { consumes } from "../core/costs.js";
import { newLeaseId } from "../core/limiter.js";
import { LeaseQueue } from "./lease-queue.js";

const PEEK = { cost: 0, mode: "reject", maxWaitMs: 0, peek: true } as const;

export type Persist = (changes: Map<string, StateChange>) => void;

/** For a key whose state lives only here (the memory store): one function for every key, not one each. */
export const NOTHING_TO_PERSIST: Persist = () => {};

/**
 * One key's limiter living in one thread: the Durable Object is one, the memory store
 * keeps one per key. Every operation runs synchronously against KeyState, so no other
 * request can interleave between reading and writing state — the same guarantee an
 * atomic Lua script gives on Redis. `persist` sees every change before the answer leaves.
 */
export class LocalKey {
  private readonly persist: Persist;
  private readonly clockMs: () => number;
  readonly state: KeyState;
  /**
   * Made for the first acquire that may wait: most keys never wait, and a queue with its two
   * callbacks is most of what an idle key would otherwise hold (the memory store keeps one
   * LocalKey per key: BENCHMARKS.md, "Memory store: bytes per key").
   */
  private waits: LeaseQueue | undefined;

  constructor(initial: Iterable<[string, StoredState]>, persist: Persist, clockMs: () => number = Date.now) {
    this.persist = persist;
    this.clockMs = clockMs;
    this.state = new KeyState(initial);
  }

  /** The FIFO of acquires waiting for a lease on this key (made when first asked for). */
  get queue(): LeaseQueue {
    this.waits ??= new LeaseQueue(
      (policies, leaseMs) => this.tryAcquire(policies, leaseMs),
      (policies) => this.nextLeaseExpiryMs(policies),
      this.clockMs,
    );
    return this.waits;
  }

  /** How many acquires wait on this key (0 without making a queue). */
  get waiting(): number {
    return this.waits?.size ?? 0;
  }

  /** Ends every wait (the store is shutting down). */
  closeWaits(): void {
    this.waits?.close();
  }

  /** `peek`: a peek (reports, starts no block). */
  check(policies: readonly Policy[], options: CheckOptions & { peek?: boolean }): Decision {
    const nowMs = this.clockMs();
    const leaseId = consumes(options) && policies.some((policy) => policy.algorithm === "concurrency") ? newLeaseId() : undefined;
    // Nobody queued (the usual case): skip building an empty set for every check.
    const queuedPolicies = this.waiting > 0 ? this.queue.queuedPolicyNames() : undefined;
    const { decision, changes } = this.state.check(policies, nowMs, { ...options, leaseId, queuedPolicies });
    this.persist(changes);
    return decision;
  }

  peek(policies: readonly Policy[]): Decision {
    return this.check(policies, PEEK);
  }

  /** Consumes `cost` even past the limit, or refunds −cost spent at spentAtMs; answers the state after it. */
  debit(policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Decision {
    const { decision, changes } = this.state.debit(policies, this.clockMs(), cost, spentAtMs);
    this.persist(changes);
    return decision;
  }

  /** Raises or sets a credits balance (the change already validated). */
  credits(policy: Policy, change: CreditsChange): CreditsOutcome {
    const { changes, ...outcome } = this.state.credits(policy, this.clockMs(), change);
    this.persist(changes);
    return outcome;
  }

  reset(policies: readonly Policy[]): void {
    this.persist(this.state.reset(policies));
    this.waits?.wake();
  }

  /** Takes a lease, waiting FIFO up to maxWaitMs. */
  acquire(policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
    // What the queue would do for an acquire that cannot wait and finds nobody waiting, without making one.
    if (options.maxWaitMs <= 0 && this.waiting === 0) return Promise.resolve(this.tryAcquire(policies, options.leaseMs));
    return this.queue.acquire(policies, options.maxWaitMs, options.leaseMs);
  }

  release(policies: readonly Policy[], leaseId: string): ReleaseResult {
    const { released, changes } = this.state.release(policies, leaseId, this.clockMs());
    this.persist(changes);
    if (released) this.waits?.wake();
    return { released };
  }

  extend(policies: readonly Policy[], leaseId: string, leaseMs: number | undefined): ExtendResult {
    const lengthMs = leaseMs ?? stackLeaseMs(policies);
    const { extended, changes } = this.state.extend(policies, leaseId, this.clockMs(), lengthMs);
    this.persist(changes);
    return { extended, leaseMs: lengthMs };
  }

  /** When every state of this key is fresh again (undefined: nothing held). */
  lastFreshAtMs(policyOf: (name: string) => Policy | undefined): number | undefined {
    return this.state.lastFreshAtMs((name, stored) => {
      const policy = policyOf(name);
      // A state whose policy we no longer know keeps the latest time it could matter.
      return policy ? storedFreshAtMs(stored, policy) : Number.MAX_SAFE_INTEGER;
    });
  }

  /**
   * Drops the states that are fresh again, answering their names: a key with many policies
   * (a rate limit service domain holds one per counter) keeps only the live ones.
   */
  dropFreshStates(policyOf: (name: string) => Policy | undefined, nowMs: number): string[] {
    const dropped: string[] = [];
    for (const [name, stored] of this.state.states) {
      const policy = policyOf(name);
      if (policy && storedFreshAtMs(stored, policy) <= nowMs) dropped.push(name);
    }
    for (const name of dropped) this.state.states.delete(name);
    return dropped;
  }

  private tryAcquire(policies: readonly Policy[], leaseMs: number | undefined): AcquireResult {
    const leaseId = newLeaseId();
    const { decision, changes } = this.state.check(policies, this.clockMs(), { cost: 1, mode: "reject", maxWaitMs: 0, leaseId, leaseMs });
    this.persist(changes);
    if (!decision.allowed) return { acquired: false, retryAfterMs: decision.retryAfterMs };
    return { acquired: true, leaseId, leaseMs: decision.leaseMs ?? leaseMs ?? 0, limit: decision.limit, remaining: decision.remaining };
  }

  private nextLeaseExpiryMs(policies: readonly Policy[]): number | undefined {
    let next: number | undefined;
    for (const policy of concurrencyPolicies(policies)) {
      const stored = this.state.states.get(policy.name);
      if (stored?.algorithm !== "concurrency") continue;
      for (const [untilMs] of stored.state.entries) if (untilMs > this.clockMs()) next = Math.min(next ?? untilMs, untilMs);
    }
    return next;
  }
}
