// The in-process store: the Limiter's methods on a LocalKey per key (the bounded key map and its eviction are bounded-keys.ts).
import { stackLeaseMs } from "../core/concurrency.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, DebitCost, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { checkCosts } from "../core/costs.js";
import { assertCreditsChange, creditsAnswer } from "../core/credits.js";
import { describeValue } from "../core/validation.js";
import type { LeaseCount, Limiter, StoreHealth } from "../core/limiter.js";
import { BoundedKeys } from "./bounded-keys.js";
import { storeCheckOptions } from "../core/check-options.js";
import { storePolicies } from "../core/store-policies.js";
import { assertDebitCost, assertDebitable, assertSpentAtMs } from "../core/debit.js";
import { LocalKey, NOTHING_TO_PERSIST } from "./local-key.js";
import { MemoryOverrideTable } from "../overrides/table.js";
import { assertClaimArgs, claimOn } from "./notice-claims.js";

/** How many (key, policy) states a MemoryStore holds unless told otherwise (README, "Limits and honest caveats"). */
export const DEFAULT_MEMORY_MAX_KEYS = 100_000;

export interface MemoryStoreOptions {
  /**
   * How many (key, policy) states are held at most (default DEFAULT_MEMORY_MAX_KEYS): a key
   * used with three policies holds three. A new state beyond it evicts another key (or
   * another state of the same key), and an evicted state starts fresh.
   */
  maxKeys?: number;
  /** How often idle keys are swept away (default 10 s). */
  sweepIntervalMs?: number;
  /** Injected clock, for tests. */
  clockMs?: () => number;
}

/**
 * In-process store: one LocalKey per key. Right for tests and for a single Node process;
 * nothing is shared between processes and nothing survives a restart.
 *
 * Bounded: at most `maxKeys` (key, policy) states, so neither a flood of distinct keys nor
 * one of distinct inline policy names can exhaust memory. A new state beyond the bound evicts
 * the least recently used key, or one of the few after it that is already fresh (evicting it
 * loses nothing); when no other key can go, states of the same key that the request does not
 * use go instead. A lease or a waiter is never evicted (its semaphore would forget who holds
 * slots and over-admit); when nothing else can go, the request is refused with
 * StoreFaultError, which never admits.
 *
 * @example const limiter = new MemoryStore(); await limiter.check("user:1", [policy], { cost: 1, mode: "reject", maxWaitMs: 0 });
 */
export class MemoryStore implements Limiter {
  readonly kind = "memory";
  readonly maxKeys: number;
  /** Runtime overrides (PUT /v1/overrides) live in the store: this one's own table. */
  readonly overrides = new MemoryOverrideTable();
  private readonly keys: BoundedKeys;
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  private readonly clockMs: () => number;
  private readonly sweepIntervalMs: number;

  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys === undefined ? DEFAULT_MEMORY_MAX_KEYS : options.maxKeys;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new TypeError(`MemoryStore: maxKeys must be a positive integer, got ${describeValue(options.maxKeys)}`);
    this.maxKeys = maxKeys;
    this.clockMs = options.clockMs ?? Date.now;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
    this.keys = new BoundedKeys(maxKeys, this.clockMs);
  }

  async check(key: string, policies: readonly Policy[], options?: CheckOptions): Promise<Decision> {
    policies = storePolicies(policies); // a policy as written in a config is parsed, garbage refused: never admitted by default
    options = checkCosts(storeCheckOptions(options), policies);
    return this.entry(key, policies).check(policies, options);
  }

  async peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    policies = storePolicies(policies);
    // An unknown key is fresh: answering needs no room, so nothing is evicted for it.
    const found = this.keys.get(key);
    if (!found) return new LocalKey([], NOTHING_TO_PERSIST, this.clockMs).peek(policies);
    return this.keys.use(found, policies).peek(policies);
  }

  async debit(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Promise<Decision> {
    return this.debitNow(key, policies, cost, spentAtMs);
  }

  debitNow(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Decision {
    policies = storePolicies(policies);
    assertDebitable(policies);
    const costs = assertDebitCost(cost, policies);
    assertSpentAtMs(spentAtMs);
    return this.entry(key, policies).debit(policies, costs, spentAtMs);
  }

  /**
   * Raises or sets a credits balance. The memory store is bounded (maxKeys): an evicted balance
   * starts again at its limit, so balances that are money belong in Redis or the Worker.
   */
  async credits(key: string, policy: Policy, change: CreditsChange): Promise<CreditsResult> {
    const [checked] = storePolicies([policy]);
    assertCreditsChange(checked!, change);
    return creditsAnswer(this.entry(key, [checked!]).credits(checked!, change));
  }

  /**
   * Notices (config `notify`) are claimed in this process, on the key's entry: a claim lives
   * as long as the key's state does (an evicted key starts fresh, its notices too). A key the
   * store holds nothing for has nothing to hold a claim against: it is granted, held nowhere
   * (the notifier claims after a decision, which made the key's entry).
   */
  async claimNotice(key: string, notice: string, ttlMs: number): Promise<boolean> {
    assertClaimArgs(key, notice, ttlMs);
    const found = this.keys.get(key);
    return found ? claimOn(found, notice, ttlMs, this.clockMs(), found.policies.size) : true;
  }

  async reset(key: string, policies: readonly Policy[]): Promise<void> {
    policies = storePolicies(policies);
    const found = this.keys.get(key);
    if (!found) return;
    found.local.reset(policies);
    this.keys.unpinned();
  }

  acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
    let local: LocalKey;
    try {
      policies = storePolicies(policies);
      local = this.entry(key, policies);
    } catch (error) {
      return Promise.reject(error);
    }
    return local.acquire(policies, options);
  }

  async release(key: string, policies: readonly Policy[], leaseId: string): Promise<ReleaseResult> {
    policies = storePolicies(policies);
    const result = this.keys.get(key)?.local.release(policies, leaseId) ?? { released: false };
    if (result.released) this.keys.unpinned();
    return result;
  }

  async extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs?: number): Promise<ExtendResult> {
    policies = storePolicies(policies);
    const found = this.keys.get(key);
    if (!found) return { extended: false, leaseMs: leaseMs ?? stackLeaseMs(policies) };
    return found.local.extend(policies, leaseId, leaseMs);
  }

  async health(): Promise<StoreHealth> {
    return { ok: true, store: this.kind };
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    for (const { local } of this.keys.fromOldest()) local.closeWaits();
    this.keys.clear();
  }

  /** Number of keys held (for tests of bounded state). */
  get size(): number {
    return this.keys.size;
  }

  /** Number of (key, policy) states held: what maxKeys bounds. */
  get states(): number {
    return this.keys.states;
  }

  /** States evicted to stay within maxKeys since the store was made (swept fresh keys are not counted). */
  get evictions(): number {
    return this.keys.evicted;
  }

  /** Leases held and waiters per concurrency policy, over every key (a walk: for scrapes, not decisions). */
  leaseCounts(): Map<string, LeaseCount> {
    const counts = new Map<string, LeaseCount>();
    const of = (name: string) => {
      let count = counts.get(name);
      if (!count) counts.set(name, (count = { held: 0, waiters: 0 }));
      return count;
    };
    const nowMs = this.clockMs();
    for (const { local } of this.keys.fromOldest()) {
      for (const [name, stored] of local.state.states) {
        if (stored.algorithm !== "concurrency") continue;
        for (const [untilMs, cost] of stored.state.entries) if (untilMs > nowMs) of(name).held += cost;
      }
      if (local.waiting > 0) local.queue.countWaiters((name) => of(name).waiters++);
    }
    return counts;
  }

  /** Drops keys whose every state is fresh again and nobody waits on. */
  sweep(): void {
    this.keys.sweep();
  }

  /**
   * Started on first use, not in the constructor: Workers forbid timers at global scope,
   * where a store is typically built.
   */
  private startSweeping(): void {
    if (this.sweepTimer) return;
    this.sweepTimer = setInterval(() => this.sweep(), this.sweepIntervalMs);
    // A sweep timer must not keep a Node process alive.
    (this.sweepTimer as { unref?: () => void }).unref?.();
  }

  private entry(key: string, policies: readonly Policy[]): LocalKey {
    this.startSweeping();
    return this.keys.entry(key, policies);
  }
}
