import { describeValue } from "../core/validation.js";
import type { AcquireResult } from "../core/types.js";
import type { Limiter } from "../core/limiter.js";
import { LeaseLostError, MaxWaitExceededError } from "./errors.js";
import { MAX_TIMER_MS } from "../core/sleep.js";
import { integerOption, keyOption, signalOption } from "./options.js";
import { type PolicyRef, type Target, bindTarget } from "./target.js";

export interface SemaphoreOptions {
  /** Where the leases live: MemoryStore (one process), RedisStore, httpLimiter(…) or bindingLimiter(…) (shared). */
  limiter: Limiter;
  key: string;
  /** A concurrency policy (by name on remote limiters, or inline), possibly stacked with others. */
  policy: PolicyRef;
  /** Longest FIFO wait for a lease, in ms (default 30 000). */
  maxWaitMs?: number;
  /** Lease length in ms; default: the policy's `lease`. A holder that crashes gives its place back after this. */
  leaseMs?: number;
}

export interface AcquireCallOptions {
  maxWaitMs?: number;
  leaseMs?: number;
  /** Stops waiting; a lease granted after the abort is released at once. */
  signal?: AbortSignal;
}

// Workers and older Nodes may lack the well-known symbol; Symbol.for matches TypeScript's downlevel helper.
const asyncDispose: typeof Symbol.asyncDispose = Symbol.asyncDispose ?? (Symbol.for("Symbol.asyncDispose") as typeof Symbol.asyncDispose);

/**
 * A held place in a distributed semaphore. Release it with `release()` or `await using`;
 * if the holder dies, the store expires it after `leaseMs`.
 *
 * @example
 * const lease = await semaphore.acquire();
 * try { await longJob(() => lease.extend()); } finally { await lease.release(); }
 */
export class Lease {
  private readonly target: Target;
  readonly leaseId: string;
  /** Lease length in ms, as granted. */
  public leaseMs: number;
  private releasedFlag = false;
  private expiresAt: number;

  constructor(target: Target, leaseId: string, leaseMs: number) {
    this.target = target;
    this.leaseId = leaseId;
    this.leaseMs = leaseMs;
    this.expiresAt = Date.now() + leaseMs;
  }

  /** Epoch ms after which the store considers the lease expired (by this process's clock). */
  get expiresAtMs(): number {
    return this.expiresAt;
  }

  get released(): boolean {
    return this.releasedFlag;
  }

  /**
   * Gives the place back. Resolves false when the lease had already expired (or was
   * released); calling it twice is harmless.
   */
  async release(): Promise<boolean> {
    if (this.releasedFlag) return false;
    this.releasedFlag = true;
    return (await this.target.release(this.leaseId)).released;
  }

  /**
   * Moves the expiry to now + `leaseMs` (default: the policy's lease) while work runs.
   * Throws LeaseLostError when the lease is no longer held: the work is not protected anymore.
   */
  async extend(leaseMs?: number): Promise<void> {
    const lengthMs = leaseMs === undefined ? undefined : integerOption("leaseMs", leaseMs, 1, MAX_TIMER_MS, 0);
    if (this.releasedFlag) throw new LeaseLostError(this.leaseId);
    const result = await this.target.extend(this.leaseId, lengthMs);
    if (!result.extended) {
      this.releasedFlag = true;
      throw new LeaseLostError(this.leaseId);
    }
    this.leaseMs = result.leaseMs;
    this.expiresAt = Date.now() + result.leaseMs;
  }

  async [asyncDispose](): Promise<void> {
    await this.release();
  }
}

/**
 * A semaphore shared through a limiter: at most `limit` leases at once across every
 * process that uses the key, granted in FIFO order by the store. Build one with createSemaphore().
 *
 * @example await semaphore.run(async (lease) => copyFiles({ onProgress: () => lease.extend() }));
 */
export class Semaphore {
  readonly key: string;
  readonly maxWaitMs: number;
  readonly leaseMs: number | undefined;
  private readonly target: Target;

  constructor(options: SemaphoreOptions) {
    if (typeof options !== "object" || options === null) throw new TypeError(`options: must be an object, got ${describeValue(options)}`);
    this.key = keyOption("key", options.key);
    this.target = bindTarget(options.limiter, this.key, options.policy, "policy");
    const known = this.target.policies;
    if (known && !known.some((policy) => policy.algorithm === "concurrency")) {
      throw new TypeError(`policy: a semaphore needs a concurrency policy, got ${known.map((policy) => `"${policy.name}" (${policy.algorithm})`).join(", ")}`);
    }
    this.maxWaitMs = integerOption("maxWaitMs", options.maxWaitMs, 0, MAX_TIMER_MS, 30_000);
    this.leaseMs = options.leaseMs === undefined ? undefined : integerOption("leaseMs", options.leaseMs, 1, MAX_TIMER_MS, 0);
  }

  /**
   * Waits in FIFO order for a lease. Throws MaxWaitExceededError after maxWaitMs.
   *
   * @example
   * await using lease = await semaphore.acquire({ maxWaitMs: 5_000 });
   * await work(); // released when the block ends, even on throw
   */
  async acquire(options: AcquireCallOptions = {}): Promise<Lease> {
    if (typeof options !== "object" || options === null) throw new TypeError(`options: must be an object, got ${describeValue(options)}`);
    const maxWaitMs = integerOption("maxWaitMs", options.maxWaitMs, 0, MAX_TIMER_MS, this.maxWaitMs);
    const leaseMs = options.leaseMs === undefined ? this.leaseMs : integerOption("leaseMs", options.leaseMs, 1, MAX_TIMER_MS, 0);
    const signal = signalOption("signal", options.signal);
    if (signal?.aborted) throw signal.reason;

    const pending = this.target.acquire(leaseMs === undefined ? { maxWaitMs } : { maxWaitMs, leaseMs });
    const result = signal ? await this.abortable(pending, signal) : await pending;
    if (!result.acquired) throw new MaxWaitExceededError(result.retryAfterMs, maxWaitMs);
    return new Lease(this.target, result.leaseId, result.leaseMs);
  }

  /**
   * Runs `fn` while holding a lease, and releases it however `fn` ends.
   *
   * @example const rows = await semaphore.run(() => db.query(sql));
   */
  async run<T>(fn: (lease: Lease) => Promise<T> | T, options: AcquireCallOptions = {}): Promise<T> {
    const lease = await this.acquire(options);
    try {
      return await fn(lease);
    } finally {
      await lease.release();
    }
  }

  /**
   * The store's queue cannot be left mid-wait, so an abort stops *our* waiting and the
   * lease, if it is granted later, goes straight back.
   */
  private abortable(pending: Promise<AcquireResult>, signal: AbortSignal): Promise<AcquireResult> {
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        reject(signal.reason);
        pending.then((result) => (result.acquired ? this.target.release(result.leaseId) : undefined)).catch(() => undefined);
      };
      signal.addEventListener("abort", onAbort, { once: true });
      pending.then(
        (result) => {
          signal.removeEventListener("abort", onAbort);
          resolve(result);
        },
        (error: unknown) => {
          signal.removeEventListener("abort", onAbort);
          reject(error);
        },
      );
    });
  }
}

/**
 * Builds a distributed FIFO semaphore over a limiter's concurrency policy.
 *
 * @example
 * const semaphore = createSemaphore({
 *   limiter: new MemoryStore(),
 *   key: "db-writers",
 *   policy: { name: "writers", algorithm: "concurrency", limit: 5, lease: "30s" },
 * });
 * await using lease = await semaphore.acquire();
 */
export function createSemaphore(options: SemaphoreOptions): Semaphore {
  return new Semaphore(options);
}
