import { DurableObject } from "cloudflare:workers";
import type { StoredState } from "../core/algorithms.js";
import { NEVER_FRESH_MS } from "../core/credits.js";
import type { StateChange } from "../core/decision.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { LocalKey } from "../stores/local-key.js";
import type { KeyLimiterObject } from "../stores/durable-object.js";
import { StateTable } from "./state-table.js";

/**
 * One rate-limit key. Its single thread is what an atomic Lua script is for Redis: every
 * decision reads and writes the in-memory state with no await in between, so concurrent
 * requests on one key can never over-admit. Every change is written to SQLite before the
 * answer leaves (the output gate holds it), so an evicted or restarted object remembers
 * what it admitted. An alarm deletes state once it is equivalent to a fresh key.
 */
export class LimiterObject extends DurableObject<Record<string, unknown>> implements KeyLimiterObject {
  private local!: LocalKey;
  private table!: StateTable;
  /** The alarm time we know is set; undefined: none. */
  private alarmAtMs: number | undefined;

  constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.table = new StateTable(ctx.storage.sql);
      this.local = new LocalKey(this.table.load(), (changes) => this.persist(changes), () => this.nowMs());
      this.alarmAtMs = (await ctx.storage.getAlarm()) ?? undefined;
    });
  }

  check(policies: Policy[], options: CheckOptions): Decision {
    return this.local.check(policies, options);
  }

  peek(policies: Policy[]): Decision {
    return this.local.peek(policies);
  }

  debit(policies: Policy[], cost: number): Decision {
    return this.local.debit(policies, cost);
  }

  reset(policies: Policy[]): void {
    this.local.reset(policies);
  }

  acquire(policies: Policy[], options: AcquireOptions): Promise<AcquireResult> {
    return this.local.acquire(policies, options);
  }

  release(policies: Policy[], leaseId: string): ReleaseResult {
    return this.local.release(policies, leaseId);
  }

  extend(policies: Policy[], leaseId: string, leaseMs?: number): ExtendResult {
    return this.local.extend(policies, leaseId, leaseMs);
  }

  credits(policy: Policy, change: CreditsChange): CreditsResult {
    return this.local.credits(policy, change);
  }

  /**
   * A notice (config `notify`, Limiter.claimNotice) held for this key until ttlMs from now: one
   * key-value row while held, dropped with the rest when the key's clean-up clears the object.
   */
  claimNotice(notice: string, ttlMs: number): boolean {
    const kv = this.ctx.storage.kv;
    const name = `~notice:${notice}`;
    if (ttlMs === 0) {
      kv.delete(name);
      return true;
    }
    const nowMs = this.nowMs();
    const heldUntilMs = kv.get<number>(name);
    if (heldUntilMs !== undefined && heldUntilMs > nowMs) return false;
    kv.put(name, nowMs + ttlMs);
    return true;
  }

  override async alarm(): Promise<void> {
    this.alarmAtMs = undefined;
    const nowMs = this.nowMs();
    for (const name of this.table.deleteFresh(nowMs)) this.local.state.states.delete(name);
    const nextMs = this.table.lastFreshAtMs();
    if (nextMs !== undefined) {
      await this.scheduleAlarm(nextMs);
    } else if (this.local.queue.size === 0) {
      // Nothing left: drop the whole database so an idle key costs no storage at all.
      await this.ctx.storage.deleteAll();
      this.table.forgetSchema();
    }
  }

  private persist(changes: Map<string, StateChange>): void {
    if (changes.size === 0) return;
    this.table.write(changes);
    let latestMs: number | undefined;
    for (const change of changes.values()) if (change) latestMs = Math.max(latestMs ?? 0, change.freshAtMs);
    // One alarm at a time: when it fires it reschedules itself for whatever is still live.
    if (latestMs !== undefined && this.alarmAtMs === undefined) void this.scheduleAlarm(latestMs);
  }

  /** The clock every decision reads (a test subclass sets its own). */
  protected nowMs(): number {
    return Date.now();
  }

  protected async scheduleAlarm(atMs: number): Promise<void> {
    // A balance that must never expire (credits: NEVER_FRESH_MS) sets no alarm: nothing to clean.
    if (atMs >= NEVER_FRESH_MS) return;
    this.alarmAtMs = Math.ceil(atMs);
    await this.ctx.storage.setAlarm(this.alarmAtMs);
  }
}

export type { StoredState };
