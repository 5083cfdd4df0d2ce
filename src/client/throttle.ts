import { describeValue } from "../core/validation.js";
import type { Decision } from "../core/types.js";
import type { Limiter } from "../core/limiter.js";
import { MaxWaitExceededError } from "./errors.js";
import { functionOption, integerOption, keyOption, signalOption, sleepOrThrow } from "./options.js";
import { MAX_TIMER_MS } from "../core/sleep.js";
import { type PolicyRef, type Target, bindTarget } from "./target.js";
import { Reservation } from "./reservation.js";

export interface ThrottleOptions {
  /** Where the shared state lives: MemoryStore, RedisStore, httpLimiter(…) or bindingLimiter(…). */
  limiter: Limiter;
  /** What is limited, shared by every caller that uses the same key (1 … 512 UTF-8 bytes). */
  key: string;
  /** A policy name (remote limiters), an inline policy (README "Algorithms"), or a stack of them. */
  policy: PolicyRef;
  /** Longest wait for a slot, in ms (default 60 000). Further slots throw MaxWaitExceededError. */
  maxWaitMs?: number;
}

export interface WaitOptions {
  /** Units this call uses (default 1). */
  cost?: number;
  /** Overrides the throttle's maxWaitMs for this call. */
  maxWaitMs?: number;
  /** Aborting gives the slot back where that is possible (see Throttle.wait). */
  signal?: AbortSignal;
}

/** A slot that has arrived. */
export interface Ticket {
  /** How long the call waited, in ms. */
  waitedMs: number;
  /** The limiter's answer; `leaseId` is set when the stack holds a concurrency policy. */
  decision: Decision;
  /** True when the slot was handed over by an aborted call of this throttle instead of reserved anew. */
  handedOver: boolean;
}

interface SpareSlot {
  atMs: number;
  cost: number;
  decision: Decision;
}

/** Round trips one pause may spend draining the shared limiter. */
const MAX_DRAIN_STEPS = 32;

/**
 * Spaces calls to fit a rate limit, shared through a limiter. Each call costs one round trip
 * (a reserve-mode check that books the earliest slot within maxWaitMs), then one timer until
 * that slot: no polling. Denied slots consume nothing. Build one with createThrottle().
 *
 * @example const { waitedMs } = await throttle.wait({ cost: 2, signal: AbortSignal.timeout(10_000) });
 */
export class Throttle {
  readonly key: string;
  readonly maxWaitMs: number;
  private readonly target: Target;
  private spares: SpareSlot[] = [];
  private pausedUntil = 0;

  constructor(options: ThrottleOptions) {
    if (typeof options !== "object" || options === null) throw new TypeError(`options: must be an object, got ${describeValue(options)}`);
    this.key = keyOption("key", options.key);
    this.target = bindTarget(options.limiter, this.key, options.policy, "policy");
    const lease = this.target.policies?.find((policy) => policy.algorithm === "concurrency");
    if (lease) throw new TypeError(`policy: "${lease.name}" is a concurrency policy, whose leases must be released; use createSemaphore for it`);
    this.maxWaitMs = integerOption("maxWaitMs", options.maxWaitMs, 0, MAX_TIMER_MS, 60_000);
  }

  /** Epoch ms before which this throttle sends nothing (set by pause()); 0 when not paused. */
  get pausedUntilMs(): number {
    return this.pausedUntil;
  }

  /**
   * Waits for a slot. Throws MaxWaitExceededError (nothing consumed) when the earliest slot
   * is beyond maxWaitMs, and LimiterUnavailableError when the limiter is down.
   *
   * Abort: an already-aborted signal consumes nothing. A later abort (answer in flight, or
   * waiting for the slot) gives the booking back where possible: a concurrency lease is
   * released; a rate slot (gcra, token-bucket, fixed/sliding window, sliding-log) is handed
   * to the next call of this throttle that can use it by its time. Those algorithms have no
   * refund, so the shared limiter itself does not get a rate slot back.
   */
  async wait(options: WaitOptions = {}): Promise<Ticket> {
    const { cost, maxWaitMs, signal } = this.waitOptions(options);
    if (signal?.aborted) throw signal.reason;
    const startMs = Date.now();
    const pauseMs = this.pausedUntil - startMs;
    if (pauseMs > maxWaitMs) throw new MaxWaitExceededError(pauseMs, maxWaitMs);
    await sleepOrThrow(pauseMs, signal);

    const budgetMs = maxWaitMs - (Date.now() - startMs);
    let slot = this.takeSpare(cost, budgetMs);
    const handedOver = slot !== undefined;
    if (!slot) {
      const decision = await this.target.check({ cost, mode: "reserve", maxWaitMs: Math.max(0, budgetMs) });
      if (!decision.allowed) throw new MaxWaitExceededError(decision.retryAfterMs, maxWaitMs);
      slot = { atMs: Date.now() + decision.waitMs, cost, decision };
    }
    try {
      await sleepOrThrow(slot.atMs - Date.now(), signal);
      // A pause that began while we waited (the server said 429) outranks our booking, within maxWaitMs.
      while (this.pausedUntil > Date.now()) {
        if (this.pausedUntil - startMs > maxWaitMs) throw new MaxWaitExceededError(this.pausedUntil - Date.now(), maxWaitMs);
        await sleepOrThrow(this.pausedUntil - Date.now(), signal);
      }
    } catch (error) {
      if (signal?.aborted || error instanceof MaxWaitExceededError) await this.giveBack(slot);
      throw error;
    }
    return { waitedMs: Date.now() - startMs, decision: slot.decision, handedOver };
  }

  /**
   * Reserve, then settle (docs/library.md): waits for a slot of `estimate` units, as
   * wait({ cost: estimate }) does, and answers a Reservation whose `settle(used)` gives the
   * unused units back (or charges the excess) once the call's cost is known. Callers in flight
   * together overspend the shared budget by at most the sum of their estimate errors.
   *
   * @example
   * const reservation = await throttle.reserve(body.max_tokens + promptTokens);
   * const answer = await callModel(body);
   * await reservation.settle(answer.usage?.total_tokens);
   */
  async reserve(estimate: number, options: Omit<WaitOptions, "cost"> = {}): Promise<Reservation> {
    const cost = integerOption("estimate", estimate, 1, 1e9, 1);
    if (typeof options === "object" && options !== null && "cost" in options) throw new TypeError("options.cost: the estimate is reserve()'s first argument; leave cost out");
    const ticket = await this.wait({ ...options, cost });
    // The slot has come (its timer fired at or after it): the units count as spent now, in its window.
    return new Reservation(this.target, cost, ticket, Date.now());
  }

  /**
   * Waits for a slot, then runs `fn`. A concurrency lease in the stack is released when `fn` settles.
   *
   * @example const user = await throttle.run(() => api.getUser(id));
   */
  async run<T>(fn: (signal: AbortSignal | undefined) => Promise<T> | T, options: WaitOptions = {}): Promise<T> {
    const ticket = await this.wait(options);
    try {
      return await fn(options.signal);
    } finally {
      if (ticket.decision.leaseId) await this.target.release(ticket.decision.leaseId);
    }
  }

  /**
   * Wraps an async function so every call waits for its slot first.
   *
   * @example const getUser = throttle.wrap(api.getUser.bind(api)); await getUser(42);
   */
  wrap<A extends unknown[], R>(fn: (...args: A) => Promise<R> | R, options: Omit<WaitOptions, "signal"> = {}): (...args: A) => Promise<R> {
    functionOption("fn", fn, undefined);
    this.waitOptions(options); // bad options fail here, not on the first call
    return (...args: A) => this.run(() => fn(...args), options);
  }

  /**
   * Sends nothing for `waitMs` (a server said Retry-After). With `shared`, also drains the
   * shared limiter so every caller of the key pauses too: reserve-mode checks consume the
   * capacity that frees up before the pause ends, largest first, at most 32 round trips.
   * This spends real quota from every policy of the stack, and window algorithms
   * (fixed-window, sliding-window, sliding-log) may hold others back up to one period
   * longer than asked, because capacity used at a time stays used for a whole window.
   */
  async pause(waitMs: number, options: { shared?: boolean } = {}): Promise<void> {
    const pauseMs = integerOption("waitMs", waitMs, 0, MAX_TIMER_MS, 0);
    const untilMs = Date.now() + pauseMs;
    this.pausedUntil = Math.max(this.pausedUntil, untilMs);
    this.spares = this.spares.filter((spare) => spare.atMs >= this.pausedUntil);
    if (options.shared) await this.drain(untilMs);
  }

  private async drain(untilMs: number): Promise<void> {
    let cost = this.capacity() ?? (await this.target.peek()).limit;
    for (let step = 0; step < MAX_DRAIN_STEPS && cost >= 1; step++) {
      const leftMs = untilMs - Date.now() - 1;
      if (leftMs < 0) return;
      const decision = await this.target.check({ cost, mode: "reserve", maxWaitMs: leftMs });
      if (decision.leaseId) await this.target.release(decision.leaseId);
      // Admitted: that capacity is gone, try the same size again. Denied: a smaller piece may still fit before untilMs.
      if (!decision.allowed) cost = cost === 1 ? 0 : Math.max(1, Math.floor(cost / 2));
    }
  }

  /** The most a single check can take from this stack, when the policies are known here. */
  private capacity(): number | undefined {
    const policies = this.target.policies;
    return policies ? Math.min(...policies.map((policy) => policy.burst)) : undefined;
  }

  private waitOptions(options: WaitOptions): { cost: number; maxWaitMs: number; signal: AbortSignal | undefined } {
    if (typeof options !== "object" || options === null) throw new TypeError(`options: must be an object, got ${describeValue(options)}`);
    return {
      cost: integerOption("cost", options.cost, 1, 1e9, 1),
      maxWaitMs: integerOption("maxWaitMs", options.maxWaitMs, 0, MAX_TIMER_MS, this.maxWaitMs),
      signal: signalOption("signal", options.signal),
    };
  }

  private takeSpare(cost: number, budgetMs: number): SpareSlot | undefined {
    const nowMs = Date.now();
    // A slot whose time has passed is gone: acting later than booked could crowd the next window.
    this.spares = this.spares.filter((spare) => spare.atMs >= nowMs);
    const index = this.spares.findIndex((spare) => spare.cost === cost && spare.atMs - nowMs <= budgetMs);
    return index < 0 ? undefined : this.spares.splice(index, 1)[0];
  }

  private async giveBack(slot: SpareSlot): Promise<void> {
    if (slot.decision.leaseId) {
      // Best effort: if the limiter is down now, the lease still expires by itself after leaseMs.
      await this.target.release(slot.decision.leaseId).catch(() => undefined);
      return;
    }
    if (slot.atMs >= Date.now()) this.spares.push(slot);
  }
}

/**
 * Builds a Throttle: calls wait for their slot under a shared rate limit instead of being refused.
 *
 * @example
 * const throttle = createThrottle({
 *   limiter: new MemoryStore(),
 *   key: "api.example.com",
 *   policy: { name: "upstream", algorithm: "sliding-log", limit: 6, period: "3s" },
 *   maxWaitMs: 30_000,
 * });
 * const results = await Promise.all(ids.map((id) => throttle.run(() => getItem(id))));
 */
export function createThrottle(options: ThrottleOptions): Throttle {
  return new Throttle(options);
}
