import { describeValue } from "../core/validation.js";
import { storeCheckOptions } from "../core/check-options.js";
import { storePolicies } from "../core/store-policies.js";
import type { CheckOptions, DebitCost, Decision, Policy } from "../core/types.js";
import { checkCosts } from "../core/costs.js";
import { ForwardingLimiter, type Limiter } from "../core/limiter.js";
import { type HotKey, batchDecision, batchSize, deniedDecision, leasable, newHotKey, samePolicy, windowLeftMs } from "./hot-key.js";

export interface LocalCacheOptions {
  /** Injected clock, for tests and simulations (default Date.now). */
  clockMs?: () => number;
  /** How much of a hot key's local traffic one batch aims to cover (default 100 ms). */
  batchTargetMs?: number;
  /** How many (key, policy) entries are held; the oldest go first (default 10,000). */
  maxEntries?: number;
}

/** How many batch calls a request waits for before it asks the store alone. */
const MAX_WAITS = 2;

const RATE_CHECK: Omit<CheckOptions, "cost"> = { mode: "reject", maxWaitMs: 0 };

/**
 * Hot keys without a hot object: a Limiter in front of another (the Durable Object store,
 * Redis) that answers most decisions of policies with `local` in this isolate or process.
 *
 * - Deny cache: a store denial (cost c, retryAfterMs r) is repeated here for cost ≥ c
 *   until r has passed since the call was sent. Rate algorithms are monotone, so the store
 *   would deny too. A block (policy `block`) is repeated for every cost until it ends.
 * - Token batches (`share > 0`, fixed-window, sliding-window, token-bucket): one store call
 *   admits a cost of b units, which are then admitted here one request at a time until the
 *   store's window (or refill interval) ends. Every unit admitted here was debited in the
 *   store first, in the same window: never an over-admission. Unspent units expire.
 *
 * Only single-policy, reject-mode checks of a cost > 0 are answered here; stacks, reserve
 * mode, peeks and leases go to the store (exact and all-or-nothing there). Store errors
 * propagate: a failed batch call admits nothing.
 *
 * @example const limiter = new LocalCache(new RedisStore({ url })); await limiter.check("tenant:1", [policy], { cost: 1, mode: "reject", maxWaitMs: 0 });
 */
export class LocalCache extends ForwardingLimiter {
  private readonly clockMs: () => number;
  private readonly batchTargetMs: number;
  private readonly maxEntries: number;
  private readonly entries = new Map<string, HotKey>();

  constructor(store: Limiter, options: LocalCacheOptions = {}) {
    super(store);
    this.clockMs = options.clockMs ?? Date.now;
    this.batchTargetMs = positive("batchTargetMs", options.batchTargetMs ?? 100);
    this.maxEntries = positive("maxEntries", options.maxEntries ?? 10_000);
    if (store.debitLater) {
      const debitLater = store.debitLater.bind(store);
      this.debitLater = async (key, policies, cost, spentAtMs) => {
        policies = storePolicies(policies);
        const sentAtMs = this.clockMs();
        return this.learnFrom(key, policies, sentAtMs, await debitLater(key, policies, cost, spentAtMs));
      };
    }
  }

  override check(key: string, policies: readonly Policy[], options?: CheckOptions): Promise<Decision> {
    // Not async: a check the local cache does not take answers with the store's own promise,
    // without an async function's extra turns (every Redis decision passes here).
    try {
      policies = storePolicies(policies);
      // Costs per policy: a stack of one takes its one cost as `cost`; a longer stack goes to the store.
      const checked = checkCosts(storeCheckOptions(options), policies);
      const policy = policies[0]!;
      if (policies.length !== 1 || !policy.local || checked.mode !== "reject" || !(checked.cost > 0)) return this.store.check(key, policies, checked);
      return this.checkLocally(key, policy, checked);
    } catch (error) {
      return Promise.reject(error);
    }
  }

  private async checkLocally(key: string, policy: Policy, options: CheckOptions): Promise<Decision> {
    const entry = this.entryOf(key, policy);
    if (!leasable(policy)) return this.answerLocally(entry, options.cost) ?? this.direct(key, entry, options.cost);
    for (let round = 0; ; round++) {
      const local = this.answerLocally(entry, options.cost, round === 0);
      if (local) return local;
      // One batch call at a time per key: wait for the one under way, then take from it.
      // A request that missed a few batches goes alone rather than wait longer.
      if (!entry.refilling) return this.refill(key, entry, options.cost);
      if (round === MAX_WAITS) return this.direct(key, entry, options.cost);
      await entry.refilling;
    }
  }

  /**
   * A debit always goes to the store (it must land there, past the limit if need be); the
   * deny cache learns from its answer: a policy with `local` that a cost-1 request would now
   * be denied by is denied here too, until the store's retry time has passed.
   */
  override async debit(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Promise<Decision> {
    policies = storePolicies(policies);
    const sentAtMs = this.clockMs();
    return this.learnFrom(key, policies, sentAtMs, await this.store.debit(key, policies, cost, spentAtMs));
  }

  /** The store's debitLater, where it has one; the deny cache learns from its answer as from a debit's. */
  readonly debitLater?: (key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number) => Promise<Decision>;

  private learnFrom(key: string, policies: readonly Policy[], sentAtMs: number, decision: Decision): Decision {
    const receivedAtMs = this.clockMs();
    for (let i = 0; i < policies.length; i++) {
      const policy = policies[i]!;
      const part = decision.policies[i];
      // A refund may free a key this cache still denies: the store's answer says it is open again.
      if (policy.local && part?.allowed) {
        const entry = this.entries.get(entryKey(key, policy));
        if (entry) entry.denied = undefined;
      }
      if (!policy.local || !part || part.allowed || part.retryAfterMs === null) continue;
      const alone: Decision = { ...part, waitMs: 0, policies: [part] };
      this.entryOf(key, policy).denied = { decision: alone, cost: 1, untilMs: sentAtMs + part.retryAfterMs, receivedAtMs };
    }
    return decision;
  }

  /** Resets the store, and this cache's entries for the key. Other caches keep theirs until they end. */
  override async reset(key: string, policies: readonly Policy[]): Promise<void> {
    await this.store.reset(key, policies);
    for (const policy of storePolicies(policies)) this.entries.delete(entryKey(key, policy));
  }

  override async close(): Promise<void> {
    this.entries.clear();
    await this.store.close?.();
  }

  /** A denial from the deny cache, an admission from the batch, or undefined: ask the store. */
  private answerLocally(entry: HotKey, cost: number, countDemand = true): Decision | undefined {
    const nowMs = this.clockMs();
    // Denied demand counts too: when the window turns, the first batch is sized for it.
    if (countDemand) entry.demandUnits += cost;
    const denied = entry.denied;
    if (denied && nowMs < denied.untilMs && cost >= denied.cost) return deniedDecision(denied, nowMs);
    const batch = entry.batch;
    if (batch && nowMs < batch.expiresAtMs && batch.leftUnits >= cost) {
      batch.leftUnits -= cost;
      return batchDecision(entry.policy, batch, nowMs);
    }
    return undefined;
  }

  /** Takes a batch (one call of cost b ≥ cost); when the store cannot give b, asks for just this request. */
  private async refill(key: string, entry: HotKey, cost: number): Promise<Decision> {
    const sentAtMs = this.clockMs();
    const units = batchSize(entry, cost, sentAtMs, { batchTargetMs: this.batchTargetMs });
    let done!: () => void;
    entry.refilling = new Promise((resolve) => (done = resolve));
    try {
      const first = await this.takeBatch(key, entry, units, cost, sentAtMs);
      if (first.request) return first.request;
      // Denied: the store said how many units it still has; take those, or the request's cost alone.
      const fewer = Math.min(units - 1, first.store.policies[0]!.remaining);
      if (fewer > cost) {
        const second = await this.takeBatch(key, entry, fewer, cost, this.clockMs());
        if (second.request) return second.request;
      }
      return await this.direct(key, entry, cost);
    } finally {
      entry.refilling = undefined;
      done();
    }
  }

  /**
   * One batch call of `units` (≥ cost), the request's own cost included. `request` is the
   * request's decision when the store admitted the units, or when units = cost (then a denial
   * is the request's too); without it the caller may ask for less.
   */
  private async takeBatch(key: string, entry: HotKey, units: number, cost: number, sentAtMs: number): Promise<{ store: Decision; request?: Decision }> {
    const decision = await this.store.check(key, [entry.policy], { ...RATE_CHECK, cost: units });
    const receivedAtMs = this.clockMs();
    entry.callMs = receivedAtMs - sentAtMs;
    const part = decision.policies[0]!;
    if (!decision.allowed) return { store: decision, request: units === cost ? this.remember(entry, decision, cost, sentAtMs) : undefined };
    const leftMs = windowLeftMs(entry.policy, part.resetMs);
    // Admitted too close to the window's end to keep units: they expire at once.
    if (leftMs === undefined) return { store: decision, request: units === cost ? decision : batchDecision(entry.policy, { leftUnits: 0, expiresAtMs: 0, storeRemaining: part.remaining, resetAtMs: receivedAtMs + part.resetMs }, receivedAtMs) };
    const batch = { leftUnits: units - cost, expiresAtMs: sentAtMs + leftMs, storeRemaining: part.remaining, resetAtMs: receivedAtMs + part.resetMs };
    entry.batch = batch;
    entry.denied = undefined;
    return { store: decision, request: batchDecision(entry.policy, batch, receivedAtMs) };
  }

  /** One request's own store call; a denial with a finite retry time feeds the deny cache. */
  private async direct(key: string, entry: HotKey, cost: number): Promise<Decision> {
    const sentAtMs = this.clockMs();
    const decision = await this.store.check(key, [entry.policy], { ...RATE_CHECK, cost });
    return this.remember(entry, decision, cost, sentAtMs);
  }

  private remember(entry: HotKey, decision: Decision, cost: number, sentAtMs: number): Decision {
    if (decision.allowed) return decision;
    const blockedMs = decision.policies[0]?.blockedMs;
    if (blockedMs !== undefined) {
      // A block refuses every request, whatever its cost, until it ends.
      entry.denied = { decision, cost: 1, untilMs: sentAtMs + blockedMs, receivedAtMs: this.clockMs() };
    } else if (decision.retryAfterMs !== null) {
      entry.denied = { decision, cost, untilMs: sentAtMs + decision.retryAfterMs, receivedAtMs: this.clockMs() };
    }
    return decision;
  }

  private entryOf(key: string, policy: Policy): HotKey {
    const id = entryKey(key, policy);
    const found = this.entries.get(id);
    if (found && samePolicy(found.policy, policy)) return found;
    const entry = newHotKey(policy);
    this.entries.delete(id);
    if (this.entries.size >= this.maxEntries) {
      // The oldest entry goes: its unspent units expire unspent (under-admission, never over).
      const oldest = this.entries.keys().next().value;
      if (oldest !== undefined) this.entries.delete(oldest);
    }
    this.entries.set(id, entry);
    return entry;
  }
}

function entryKey(key: string, policy: Policy): string {
  return `${policy.name}\u0000${key}`;
}

function positive(name: string, value: number): number {
  if (!Number.isFinite(value) || value <= 0) throw new TypeError(`LocalCache: ${name} must be a positive number, got ${describeValue(value)}`);
  return value;
}
