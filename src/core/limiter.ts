import type { AcquireOptions, AcquireResult, CheckOptions, CreditsChange, CreditsResult, DebitCost, Decision, ExtendResult, Policy, ReleaseResult } from "./types.js";

export interface StoreHealth {
  ok: boolean;
  /** "memory", "durable-object", "redis", "redis-cluster" or "redis-sentinel". */
  store: string;
  /** A short reason when not ok. */
  detail?: string;
}

/**
 * What every store implements: the Memory store, the Durable Object store and Redis.
 * Keys are user keys (1 … 512 UTF-8 bytes); policies are validated. Stores throw
 * StoreUnavailableError when they cannot reach their backend, and never decide by
 * themselves what a failure means (see `applyFailMode`).
 */
export interface Limiter {
  readonly kind: string;
  /** Decides one request, all-or-nothing over the stack; `options.costs` charges each policy its own cost (CheckOptions.costs). */
  check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision>;
  /** A cost-0 check: nothing is consumed, and no block starts. */
  peek(key: string, policies: readonly Policy[]): Promise<Decision>;
  /**
   * Consumes `cost` (−1e9 … 1e9, see below) from every policy of the stack even past its limit, atomically:
   * for work that already happened (the origin answered). The state may go into debt that
   * later requests wait out. Answers the state after the debit as a peek sees it (`allowed`:
   * a cost-1 request would be admitted now). A stack with a concurrency policy is refused
   * with a ValidationError naming `mode` (a lease is released, not spent).
   *
   * A negative cost (−1e9 … −1) is a refund: the units go back by each algorithm's rule
   * (never below the key's empty state, never above its limit or burst, only to the current
   * window). A carried debit (debitLater) is applied as given, in order, never summed with
   * another: a refund and a debit of the same key do not cancel out, each has its own rule.
   *
   * `spentAtMs`, for a refund: when the units were spent (the reservation's time, Date.now()
   * as this process reads it, or the store's injected clock), so they go back to the window
   * they were spent in: a fixed window already turned gives back nothing, a sliding window or
   * log takes them from that window's count or bucket, not the newest. Absent: the current
   * window. A store whose clock is another host's (Redis's TIME) places it by how long ago it
   * was, so the hosts' clocks need not agree. Ignored for a positive cost. A bucket (GCRA,
   * token bucket) never holds more than its burst whatever it says.
   *
   * A cost per policy (DebitCost: a list aligned with `policies`, or by policy name naming each
   * one) debits, refunds (negative) or leaves alone (0) each policy by its own cost, in the same
   * one atomic step: a route whose policies count different measures settles them in one call
   * (debitLater carries it the same way). A bad one is a ValidationError naming `cost.<i>`.
   *
   * @example limiter.debit(key, [rpm, itpm, otpm], [0, -200, 350], reservedAtMs)
   */
  debit(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Promise<Decision>;
  /**
   * The same debit, answered in the call: only stores whose state lives in this process (the
   * memory store) have it. A counted route's answer head then goes out without waiting for a
   * promise. Throws what `debit` rejects with. A decorator that changes `debit` must not
   * forward this one (it would go around the change).
   */
  debitNow?(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Decision;
  /**
   * The same debit, for work nobody waits on (a cost read from an answer's body, after its head
   * went out): the store may hold it briefly and send it with the key's next call from this
   * process, so one request to the store carries both (the Durable Object store: within
   * DEBIT_CARRY_MS, else alone). The key's next check, peek or debit through this store always
   * sees it. Answers the state after it once it has landed; rejects as `debit` would.
   */
  debitLater?(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Promise<Decision>;
  reset(key: string, policies: readonly Policy[]): Promise<void>;
  /** Takes a lease from every concurrency policy of the stack, waiting FIFO up to maxWaitMs. */
  acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult>;
  release(key: string, policies: readonly Policy[], leaseId: string): Promise<ReleaseResult>;
  /** Moves a held lease's expiry to now + leaseMs (default: the policy's lease). */
  extend(key: string, policies: readonly Policy[], leaseId: string, leaseMs?: number): Promise<ExtendResult>;
  /**
   * Raises (`add`) or sets (`set`) the balance of a `credits` policy for the key, atomically,
   * and answers it as a decision would report `remaining` (never below 0). A policy that is
   * not credits, or a change that is not an integer 0 … 1e15, is a ValidationError naming the field
   * (`add` too when it would take the balance past 1e15, MAX_BALANCE: nothing changed).
   */
  credits(key: string, policy: Policy, change: CreditsChange): Promise<CreditsResult>;
  health(): Promise<StoreHealth>;
  /**
   * Claims a notice (config `notify`: a webhook event for the key, such as `warning:monthly`)
   * for ttlMs: true for the one caller that gets it, false while it is held; ttlMs 0 lets it
   * go. A store that processes or isolates share answers for all of them, so they send a notice
   * once between them. Absent: each process claims for itself.
   */
  claimNotice?(key: string, notice: string, ttlMs: number): Promise<boolean>;
  /**
   * A counted request (docs/counting.md) was decided on a peek: admitted or refused (or, in a
   * dry run, would be) on that decision, so the peek is a decision as a check is, and took
   * `durationMs` of the store. Stores leave it out; decorators that tell of decisions hear it:
   * the observed limiter (metrics, live stats, log lines) of every one, config `notify` of
   * denials. Never throws.
   */
  decidedOnPeek?(key: string, policies: readonly Policy[], decision: Decision, durationMs: number): void;
  close?(): Promise<void>;
  /**
   * Leases held and callers waiting, per concurrency policy, where the store can tell without
   * a round trip (the memory store); undefined elsewhere. Read at scrape time, not per decision.
   */
  leaseCounts?(): Map<string, LeaseCount>;
  /**
   * Times the store noticed it lost its data (Redis restarted empty, FLUSHALL, a failover);
   * undefined where it cannot happen or be told. Read at scrape time.
   */
  storeResets?(): number;
  /**
   * Store calls in flight, calls waiting for a slot, and calls shed so far, where calls are
   * bounded (the Redis store; see docs/operations.md); undefined elsewhere. Read at scrape time.
   */
  callCounts?(): CallCounts;
}

/** What a store's call bound holds now (see Limiter.callCounts). */
export interface CallCounts {
  /** Calls sent and not yet answered (nor timed out). */
  inFlight: number;
  /** Calls waiting for a slot, oldest first. */
  queued: number;
  /** Calls shed since the store was made (OverloadedError): the queue was full or a call waited too long. */
  shed: number;
}

/** Leases held (their cost) and callers waiting for one, of one concurrency policy. */
export interface LeaseCount {
  held: number;
  waiters: number;
}

/** The store could not be reached in time; `failMode` decides what happens next. */
export class StoreUnavailableError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreUnavailableError";
  }
}

/**
 * Spillway itself is saturated: more store calls are waiting than it may queue, or a call waited
 * longer than it may for a slot (a Durable Object's `overloaded` error means the same). Nothing
 * was decided, and it is deliberately *not* a StoreUnavailableError: shedding never admits,
 * whatever the failMode (a burst must not turn `failMode: "open"` into "admit everyone").
 * The HTTP layer answers 503 with Retry-After and type `urn:spillway:problem:overloaded`.
 */
export class OverloadedError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "OverloadedError";
  }
}

/**
 * The store answered, but with an error that neither retrying nor failing open may hide
 * (CROSSSLOT, WRONGTYPE, a script error): a bug or a misconfiguration. It is deliberately
 * *not* a StoreUnavailableError, so `applyFailMode` rethrows it and no traffic is ever
 * admitted because of it. The HTTP layer answers 503.
 */
export class StoreFaultError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "StoreFaultError";
  }
}

/**
 * Runs a decision and applies the policies' failMode when the store is unreachable:
 * admit (and say so) only when every policy of the stack is `failMode: "open"`;
 * otherwise rethrow, which the HTTP layer answers with 503.
 */
export function applyFailMode(policies: readonly Policy[], run: () => Promise<Decision>): Promise<Decision> {
  // One reaction, not an async function's await: this runs for every decision.
  let running: Promise<Decision>;
  try {
    running = run();
  } catch (error) {
    running = Promise.reject(error);
  }
  return running.catch((error: unknown) => failOpenOrRethrow(policies, error));
}

/**
 * The fail-open rule, once: an error may be failed open only when the store was unreachable
 * or did not answer within its timeout (StoreUnavailableError), never a store fault, local
 * overload (OverloadedError) or bad input, and every policy of the stack is `failMode: "open"`.
 */
export function mayFailOpen(policies: readonly Policy[], error: unknown): boolean {
  return error instanceof StoreUnavailableError && policies.every((policy) => policy.failMode === "open");
}

/** applyFailMode's rule for an error already caught (callers on a hot path skip the wrapper). */
export function failOpenOrRethrow(policies: readonly Policy[], error: unknown): Decision {
  if (!mayFailOpen(policies, error)) throw error;
  return failedOpenDecision(policies);
}

export function failedOpenDecision(policies: readonly Policy[]): Decision {
  const results = policies.map((policy) => ({ policy: policy.name, allowed: true, limit: policy.limit, remaining: policy.limit, resetMs: 0, retryAfterMs: 0 }));
  const top = results[0]!;
  return { ...top, waitMs: 0, policies: results, failedOpen: true };
}

/** A fresh lease id: random, unguessable, so one caller cannot release another's lease. */
export function newLeaseId(): string {
  return crypto.randomUUID();
}

/**
 * A Limiter that hands every call to `store`: the base of decorators that change an operation
 * or two (LocalCache) and forward the rest as they are.
 */
export class ForwardingLimiter implements Limiter {
  readonly kind: string;
  readonly store: Limiter;
  readonly leaseCounts?: () => Map<string, LeaseCount>;
  readonly storeResets?: () => number;
  readonly callCounts?: () => CallCounts;
  readonly claimNotice?: (key: string, notice: string, ttlMs: number) => Promise<boolean>;
  readonly decidedOnPeek?: (key: string, policies: readonly Policy[], decision: Decision, durationMs: number) => void;

  constructor(store: Limiter) {
    this.store = store;
    this.kind = store.kind;
    if (store.leaseCounts) this.leaseCounts = () => store.leaseCounts!();
    if (store.storeResets) this.storeResets = () => store.storeResets!();
    if (store.callCounts) this.callCounts = () => store.callCounts!();
    if (store.claimNotice) this.claimNotice = (key, notice, ttlMs) => store.claimNotice!(key, notice, ttlMs);
    if (store.decidedOnPeek) this.decidedOnPeek = (key, policies, decision, durationMs) => store.decidedOnPeek!(key, policies, decision, durationMs);
  }

  check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    return this.store.check(key, policies, options);
  }

  peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    return this.store.peek(key, policies);
  }

  debit(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Promise<Decision> {
    return this.store.debit(key, policies, cost, spentAtMs);
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

  credits(key: string, policy: Policy, change: CreditsChange): Promise<CreditsResult> {
    return this.store.credits(key, policy, change);
  }

  health(): Promise<StoreHealth> {
    return this.store.health();
  }

  async close(): Promise<void> {
    await this.store.close?.();
  }
}
