import { DurableObject } from "cloudflare:workers";
import type { StoredState } from "../core/algorithms.js";
import { type CreditsOutcome, NEVER_FRESH_MS } from "../core/credits.js";
import type { StateChange } from "../core/decision.js";
import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, DebitCost, Decision, ExtendResult, Policy, ReleaseResult } from "../core/types.js";
import { LocalKey } from "../stores/local-key.js";
import type { KeyLimiterObject } from "../stores/durable-object.js";
import type { CarriedDebit, NextCall } from "../stores/debit-carry.js";
import { type KeyStorage, StateTable } from "./state-table.js";

/**
 * The clean-up alarm comes no sooner than this after it is set. A state is often fresh again
 * within milliseconds (a GCRA key of 1000/s after one request): an alarm at that moment would
 * cost a row (setAlarm), an object request and a deleteAll per decision for a key used every
 * few seconds. A minute's wait keeps its row (bytes, at $0.20 per GB-month) and sets one alarm
 * per minute of activity instead (docs/worker.md, "What it costs").
 */
export const CLEANUP_DELAY_MS = 60_000;

/**
 * One rate-limit key. Its single thread is what an atomic Lua script is for Redis: every
 * decision reads and writes the in-memory state with no await in between, so concurrent
 * requests on one key can never over-admit. Every change is written to SQLite before the
 * answer leaves (the output gate holds it), so an evicted or restarted object remembers
 * what it admitted. The key's states are one row (state-table.ts; past 64 states, rows of
 * 64): a decision writes one row whatever the stack, a denial writes none. One alarm at a time cleans up: it is set when
 * none is pending and moves itself on while state is live; once every state is equivalent
 * to a fresh key, one deleteAll() drops the whole database (no row deleted before it).
 */
export class LimiterObject extends DurableObject<Record<string, unknown>> implements KeyLimiterObject {
  private local!: LocalKey;
  private table!: StateTable;
  private storage!: KeyStorage;
  /** Changes of a debitThen under way, written once at its end; undefined: write each at once. */
  private batched: Map<string, StateChange> | undefined;
  /** The alarm time we know is set; undefined: none. */
  private alarmAtMs: number | undefined;

  constructor(ctx: DurableObjectState, env: Record<string, unknown>) {
    super(ctx, env);
    void ctx.blockConcurrencyWhile(async () => {
      this.storage = this.keyStorage();
      this.table = new StateTable(this.storage);
      this.local = new LocalKey(this.table.load(), (changes) => this.persist(changes), () => this.nowMs());
      if (this.table.emptyLegacy) await this.storage.deleteAll();
      this.alarmAtMs = (await this.storage.getAlarm()) ?? undefined;
    });
  }

  check(policies: Policy[], options: CheckOptions): Decision {
    return this.local.check(policies, options);
  }

  peek(policies: Policy[]): Decision {
    return this.local.peek(policies);
  }

  debit(policies: Policy[], cost: DebitCost, spentAtMs?: number): Decision {
    return this.local.debit(policies, cost, spentAtMs);
  }

  /**
   * Debits a Worker held for this key (DurableObjectStore.debitLater), in order, then answers the
   * call they rode with: one request for both, and one row written for all of it.
   */
  debitThen(debits: CarriedDebit[], next?: NextCall): { debits: Decision[]; next?: Decision } {
    this.batched = new Map();
    try {
      const answers = debits.map((debit) => this.local.debit(debit.policies, debit.cost, debit.spentAtMs));
      if (!next) return { debits: answers };
      const answer = "peek" in next ? this.local.peek(next.peek) : "check" in next ? this.local.check(next.check, next.options) : this.local.debit(next.debit, next.cost, next.spentAtMs);
      return { debits: answers, next: answer };
    } finally {
      const changes = this.batched;
      this.batched = undefined;
      this.persist(changes);
    }
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

  credits(policy: Policy, change: CreditsChange): CreditsOutcome {
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
    const fresh = this.table.takeFresh(nowMs);
    for (const name of fresh) this.local.state.states.delete(name);
    const nextMs = this.table.lastFreshAtMs();
    if (nextMs === undefined && this.local.queue.size === 0) {
      // Nothing left: drop the whole database in one step (no row deleted before it), so an
      // idle key costs no storage at all.
      await this.storage.deleteAll();
      this.table.clear();
      return;
    }
    // Some states are fresh again, others live (or waiters hold the object): the row keeps
    // only the live ones.
    if (fresh.length > 0) this.table.rewrite(this.local.state.states);
    if (nextMs !== undefined) await this.scheduleAlarm(Math.max(nextMs, nowMs + CLEANUP_DELAY_MS));
  }

  private persist(changes: Map<string, StateChange>): void {
    if (changes.size === 0) return;
    if (this.batched) {
      // Inside debitThen: the row is written once, after every step (the last change of a policy wins).
      for (const [name, change] of changes) this.batched.set(name, change);
      return;
    }
    this.table.write(changes, this.local.state.states);
    // One alarm at a time, set only when none is pending: when it fires it moves itself on
    // to whatever is still live, so a busy key sets about one alarm per period, not one per decision.
    if (this.alarmAtMs !== undefined) return;
    const latestMs = this.table.lastFreshAtMs();
    if (latestMs !== undefined) void this.scheduleAlarm(Math.max(latestMs, this.nowMs() + CLEANUP_DELAY_MS));
  }

  /** The storage the state row reads and writes (a probe subclass wraps it to count). */
  protected keyStorage(): KeyStorage {
    return this.ctx.storage;
  }

  /** The clock every decision reads (a test subclass sets its own). */
  protected nowMs(): number {
    return Date.now();
  }

  protected async scheduleAlarm(atMs: number): Promise<void> {
    // A balance that must never expire (credits: NEVER_FRESH_MS) sets no alarm: nothing to clean.
    if (atMs >= NEVER_FRESH_MS) return;
    this.alarmAtMs = Math.ceil(atMs);
    await this.storage.setAlarm(this.alarmAtMs);
  }
}

export type { StoredState };
