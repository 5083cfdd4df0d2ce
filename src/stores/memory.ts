import type { AcquireOptions, AcquireResult, CheckOptions, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import type { Limiter, StoreHealth } from "../limiter.js";
import { storePolicies } from "../core/store-policies.js";
import { LocalKey } from "./local-key.js";

export interface MemoryStoreOptions {
  /** How often idle keys are swept away (default 10 s). */
  sweepIntervalMs?: number;
  /** Injected clock, for tests. */
  clockMs?: () => number;
}

/**
 * In-process store: one LocalKey per key. Right for tests and for a single Node process;
 * nothing is shared between processes and nothing survives a restart.
 *
 * @example const limiter = new MemoryStore(); await limiter.check("user:1", [policy], { cost: 1, mode: "reject", maxWaitMs: 0 });
 */
export class MemoryStore implements Limiter {
  readonly kind = "memory";
  private readonly keys = new Map<string, { local: LocalKey; policies: Map<string, Policy> }>();
  private sweepTimer: ReturnType<typeof setInterval> | undefined;
  private readonly clockMs: () => number;
  private readonly sweepIntervalMs: number;

  constructor(options: MemoryStoreOptions = {}) {
    this.clockMs = options.clockMs ?? Date.now;
    this.sweepIntervalMs = options.sweepIntervalMs ?? 10_000;
  }

  async check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    policies = storePolicies(policies); // a policy as written in a config is parsed, garbage refused: never admitted by default
    return this.entry(key, policies).check(policies, options);
  }

  async peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    policies = storePolicies(policies);
    return this.entry(key, policies).peek(policies);
  }

  async reset(key: string, policies: readonly Policy[]): Promise<void> {
    policies = storePolicies(policies);
    this.keys.get(key)?.local.reset(policies);
  }

  async acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
    policies = storePolicies(policies);
    return this.entry(key, policies).acquire(policies, options);
  }

  async release(key: string, policies: readonly Policy[], leaseId: string): Promise<ReleaseResult> {
    policies = storePolicies(policies);
    return this.keys.get(key)?.local.release(policies, leaseId) ?? { released: false };
  }

  async extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs?: number): Promise<ExtendResult> {
    policies = storePolicies(policies);
    const found = this.keys.get(key);
    if (!found) return { extended: false, leaseMs: leaseMs ?? Math.min(...policies.map((policy) => policy.leaseMs)) };
    return found.local.extend(policies, leaseId, leaseMs);
  }

  async health(): Promise<StoreHealth> {
    return { ok: true, store: this.kind };
  }

  async close(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    this.sweepTimer = undefined;
    for (const { local } of this.keys.values()) local.queue.close();
    this.keys.clear();
  }

  /** Number of keys held (for tests of bounded state). */
  get size(): number {
    return this.keys.size;
  }

  /** Drops keys whose every state is fresh again and nobody waits on. */
  sweep(): void {
    const nowMs = this.clockMs();
    for (const [key, { local, policies }] of this.keys) {
      if (local.queue.size > 0) continue;
      const freshAtMs = local.lastFreshAtMs((name) => policies.get(name));
      if (freshAtMs === undefined || freshAtMs <= nowMs) this.keys.delete(key);
    }
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
    let found = this.keys.get(key);
    if (!found) {
      found = { local: new LocalKey([], () => {}, this.clockMs), policies: new Map() };
      this.keys.set(key, found);
    }
    for (const policy of policies) found.policies.set(policy.name, policy);
    return found.local;
  }
}
