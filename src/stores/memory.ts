import { stackLeaseMs } from "../core/concurrency.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { assertCreditsChange, creditsAnswer } from "../core/credits.js";
import { describeValue } from "../core/validation.js";
import { type LeaseCount, type Limiter, type StoreHealth, StoreFaultError } from "../core/limiter.js";
import { type KeyEntry, KeyTable } from "./key-table.js";
import { storeCheckOptions } from "../core/check-options.js";
import { storePolicies } from "../core/store-policies.js";
import { assertDebitCost, assertDebitable } from "../core/debit.js";
import { LocalKey, NOTHING_TO_PERSIST } from "./local-key.js";
import { MemoryOverrideTable } from "../overrides/table.js";
import { assertClaimArgs, claimOn } from "./notice-claims.js";

/** How many (key, policy) states a MemoryStore holds unless told otherwise (README, "Limits and honest caveats"). */
export const DEFAULT_MEMORY_MAX_KEYS = 100_000;

/** How many of the least recently used evictable keys are searched for a fresh one: bounded work per new key. */
const FRESH_SEARCH = 8;

/**
 * After a walk found every key pinned, new keys are refused for this long without another
 * walk (a release or reset ends it sooner): a flood of new keys costs no walk each.
 */
const PINNED_RECHECK_MS = 100;

/** The most policies a stack holds (resolvePolicies): a key with more states is fed inline names. */
const MAX_STACK_POLICIES = 16;

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
  private readonly keys = new KeyTable();
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  private readonly clockMs: () => number;
  private readonly sweepIntervalMs: number;
  private evicted = 0;
  /** Until when new keys are refused without a look, after one found every key pinned. */
  private pinnedUntilMs = 0;

  constructor(options: MemoryStoreOptions = {}) {
    const maxKeys = options.maxKeys === undefined ? DEFAULT_MEMORY_MAX_KEYS : options.maxKeys;
    if (!Number.isSafeInteger(maxKeys) || maxKeys < 1) throw new TypeError(`MemoryStore: maxKeys must be a positive integer, got ${describeValue(options.maxKeys)}`);
    this.maxKeys = maxKeys;
    this.clockMs = options.clockMs ?? Date.now;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
  }

  async check(key: string, policies: readonly Policy[], options?: CheckOptions): Promise<Decision> {
    options = storeCheckOptions(options);
    policies = storePolicies(policies); // a policy as written in a config is parsed, garbage refused: never admitted by default
    return this.entry(key, policies).check(policies, options);
  }

  async peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    policies = storePolicies(policies);
    // An unknown key is fresh: answering needs no room, so nothing is evicted for it.
    const found = this.keys.get(key);
    if (!found) return new LocalKey([], NOTHING_TO_PERSIST, this.clockMs).peek(policies);
    return this.use(found, policies).peek(policies);
  }

  async debit(key: string, policies: readonly Policy[], cost: number): Promise<Decision> {
    return this.debitNow(key, policies, cost);
  }

  debitNow(key: string, policies: readonly Policy[], cost: number): Decision {
    policies = storePolicies(policies);
    assertDebitable(policies);
    assertDebitCost(cost);
    return this.entry(key, policies).debit(policies, cost);
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
    this.pinnedUntilMs = 0;
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
    if (result.released) this.pinnedUntilMs = 0;
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
    return this.evicted;
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
    const nowMs = this.clockMs();
    for (const entry of this.keys.fromOldest()) {
      if (entry.local.waiting > 0) continue;
      const freshAtMs = freshAt(entry);
      if (freshAtMs === undefined || freshAtMs <= nowMs) this.keys.delete(entry);
      // A live key sheds its fresh states (the rate limit service keeps a domain's counters under one key).
      else for (const name of entry.local.dropFreshStates((policyName) => entry.policies.get(policyName), nowMs)) this.keys.forget(entry, name);
    }
    this.pinnedUntilMs = 0;
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
    const found = this.keys.get(key);
    if (found) return this.use(found, policies);
    this.makeRoom(newStates(undefined, policies), undefined, policies);
    const entry = this.keys.add(key, new LocalKey([], NOTHING_TO_PERSIST, this.clockMs));
    this.keys.remember(entry, policies);
    return entry.local;
  }

  private use(found: KeyEntry, policies: readonly Policy[]): LocalKey {
    this.keys.touch(found);
    const needed = newStates(found, policies);
    if (needed > 0) this.makeRoom(needed, found, policies);
    this.keys.remember(found, policies);
    return found.local;
  }

  /** Frees room for `needed` new states of `current` (a key held already, or none yet) and its stack. */
  private makeRoom(needed: number, current: KeyEntry | undefined, stack: readonly Policy[]): void {
    if (needed > this.maxKeys) throw new StoreFaultError(`the memory store holds at most ${this.maxKeys} (key, policy) states, and this request needs ${needed} new ones; raise maxKeys (--memory-max-keys)`);
    // A key used with more policies than any one stack holds is being fed ever new (inline)
    // names: it pays with its own states first, so it cannot push every other key out.
    const ownFirst = current !== undefined && current.policies.size >= MAX_STACK_POLICIES;
    while (this.keys.states + needed > this.maxKeys) {
      if (ownFirst && this.evictStateOf(current, stack)) continue;
      if (this.evictKey(current)) continue;
      if (current && this.evictStateOf(current, stack)) continue;
      throw this.fullError();
    }
  }

  /**
   * Evicts one key, walking from the least recently used: the first fresh key among the
   * first FRESH_SEARCH evictable ones, else the first evictable one. Not "fresh soonest":
   * a key that keeps being denied keeps its old state, and is exactly the one to keep.
   * Pinned keys met on the way move to the end (they are in use), so the next walk does
   * not meet them again.
   */
  private evictKey(current: KeyEntry | undefined): boolean {
    const nowMs = this.clockMs();
    if (nowMs < this.pinnedUntilMs) return false;
    let victim: KeyEntry | undefined;
    let searched = 0;
    // Pinned keys moved to the end are met again at the end of the walk: stop before.
    let left = this.keys.size;
    for (const entry of this.keys.fromOldest()) {
      if (left-- === 0) break;
      if (entry === current) continue;
      if (isPinned(entry, nowMs)) {
        this.keys.touch(entry);
        continue;
      }
      victim ??= entry;
      if ((freshAt(entry) ?? nowMs) <= nowMs) {
        victim = entry;
        break;
      }
      if (++searched >= FRESH_SEARCH) break;
    }
    if (victim === undefined) {
      this.pinnedUntilMs = nowMs + PINNED_RECHECK_MS;
      return false;
    }
    this.evicted += victim.policies.size;
    this.keys.delete(victim);
    return true;
  }

  /**
   * Evicts one state of `current` that its request does not use and that holds no lease and
   * no waiter (the oldest remembered first): a key used with ever new policy names pays for
   * them with its own states once no other key can go.
   */
  private evictStateOf(current: KeyEntry, stack: readonly Policy[]): boolean {
    const nowMs = this.clockMs();
    const queued = current.local.waiting > 0 ? current.local.queue.queuedPolicyNames() : undefined;
    for (const [name, policy] of current.policies) {
      if (queued?.has(name) || stack.some((used) => used.name === name)) continue;
      const stored = current.local.state.states.get(name);
      if (stored?.algorithm === "concurrency" && stored.state.entries.some(([untilMs]) => untilMs > nowMs)) continue;
      current.local.reset([policy]);
      this.keys.forget(current, name);
      this.evicted++;
      return true;
    }
    return false;
  }

  private fullError(): StoreFaultError {
    return new StoreFaultError(`the memory store is full: all ${this.maxKeys} (key, policy) states belong to keys that hold leases or waiters, so a new one cannot be tracked; raise maxKeys (--memory-max-keys)`);
  }
}

/** How many states of `stack` the key does not hold yet (every one for a new key). */
function newStates(entry: KeyEntry | undefined, stack: readonly Policy[]): number {
  let count = 0;
  for (let i = 0; i < stack.length; i++) {
    const name = stack[i]!.name;
    if (entry?.policies.has(name)) continue;
    // Stacks name a policy once (resolvePolicies), but a direct caller may not: count names, not items.
    let repeated = false;
    for (let j = 0; j < i; j++) if (stack[j]!.name === name) repeated = true;
    if (!repeated) count++;
  }
  return count;
}

/** When every state of a key is fresh again (undefined: nothing held). */
function freshAt({ local, policies }: KeyEntry): number | undefined {
  return local.lastFreshAtMs((name) => policies.get(name));
}

/** A key that must not be evicted: somebody waits on it, or it holds a live lease. */
function isPinned({ local }: KeyEntry, nowMs: number): boolean {
  if (local.waiting > 0) return true;
  for (const stored of local.state.states.values()) {
    if (stored.algorithm === "concurrency" && stored.state.entries.some(([untilMs]) => untilMs > nowMs)) return true;
  }
  return false;
}
