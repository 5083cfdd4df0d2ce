import { type CallCounts, OverloadedError } from "../core/limiter.js";

/** Store calls in flight at most, per store (`spillway serve --max-inflight`). */
export const DEFAULT_MAX_IN_FLIGHT = 256;
/** Calls waiting for a slot at most; past it a call is shed. */
export const DEFAULT_MAX_QUEUED = 20_000;
/** Longest wait for a slot; past it a call is shed. */
export const DEFAULT_QUEUE_TIMEOUT_MS = 10_000;

export interface CallQueueOptions {
  /** Calls in flight at most (default 256). */
  maxInFlight?: number;
  /** Calls waiting for a slot at most (default 20,000); one more is shed at once. */
  maxQueued?: number;
  /** How long a call may wait for a slot (default 10,000 ms); past it, it is shed. */
  queueTimeoutMs?: number;
  /** Told once when shedding starts (with why) and once when the queue has drained again. */
  onShedding?: (shedding: boolean, detail: string) => void;
}

/** A call waiting for a slot. */
interface Queued {
  start: () => Promise<unknown>;
  resolve: (value: Promise<unknown>) => void;
  reject: (error: Error) => void;
  deadlineMs: number;
}

/**
 * Bounds a store's calls in flight: past `maxInFlight`, calls wait in a FIFO of at most
 * `maxQueued`, each for at most `queueTimeoutMs`; a call that finds the FIFO full, or waits
 * longer, is shed with OverloadedError (a 503 that never admits, whatever the failMode).
 *
 * Why: a store answers a deep pipeline only as fast as it works through it, so thousands of
 * commands sent at once (one burst) wait in the store's queue and in this process's socket
 * buffers, where nothing can tell "slow because of us" from "the store is down". Bounded,
 * the store's queue stays short, and the wait happens here, where it is counted as what it is.
 *
 * When idle (a free slot, nobody waiting) a call costs a comparison and an increment: no
 * promise, no timer. The owner calls `done()` once per started call, when its caller is told.
 */
export class CallQueue {
  readonly maxInFlight: number;
  readonly maxQueued: number;
  readonly queueTimeoutMs: number;
  #inFlight = 0;
  #shed = 0;
  #queue: (Queued | undefined)[] = [];
  #head = 0;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #shedding = false;
  readonly #onShedding: (shedding: boolean, detail: string) => void;

  constructor(options: CallQueueOptions = {}) {
    this.maxInFlight = whole("maxInFlight", options.maxInFlight ?? DEFAULT_MAX_IN_FLIGHT, 1);
    this.maxQueued = whole("maxQueued", options.maxQueued ?? DEFAULT_MAX_QUEUED, 0);
    this.queueTimeoutMs = whole("queueTimeoutMs", options.queueTimeoutMs ?? DEFAULT_QUEUE_TIMEOUT_MS, 1);
    this.#onShedding = options.onShedding ?? (() => {});
  }

  /** Takes a slot when one is free and nobody waits for one (FIFO): then the caller starts its call and calls done() later. */
  tryTake(): boolean {
    if (this.#inFlight >= this.maxInFlight || this.#head < this.#queue.length) return false;
    this.#inFlight++;
    return true;
  }

  /** Starts `start` when a slot is free, oldest first; rejects OverloadedError when shed. */
  wait<T>(start: () => Promise<T>): Promise<T> {
    const queued = this.#queue.length - this.#head;
    if (queued >= this.maxQueued) return Promise.reject(this.#shedOne(`${queued} store calls already wait (maxQueued ${this.maxQueued})`));
    return new Promise<T>((resolve, reject) => {
      const deadlineMs = performance.now() + this.queueTimeoutMs;
      this.#queue.push({ start, resolve: resolve as (value: Promise<unknown>) => void, reject, deadlineMs });
      this.#timer ??= this.#arm(this.queueTimeoutMs);
    });
  }

  /** A started call is over (answered, failed or timed out for its caller): its slot goes to the oldest waiter. */
  done(): void {
    this.#inFlight--;
    if (this.#head < this.#queue.length) this.#startWaiting(performance.now());
  }

  counts(): CallCounts {
    return { inFlight: this.#inFlight, queued: this.#queue.length - this.#head, shed: this.#shed };
  }

  /** Starts waiting calls while slots are free, shedding those past their deadline. */
  #startWaiting(nowMs: number): void {
    while (this.#head < this.#queue.length && this.#inFlight < this.maxInFlight) {
      const next = this.#take();
      if (next.deadlineMs <= nowMs) {
        next.reject(this.#shedOne(`a store call waited over queueTimeoutMs (${this.queueTimeoutMs} ms) for one of ${this.maxInFlight} slots`));
        continue;
      }
      this.#inFlight++;
      let started: Promise<unknown>;
      try {
        started = next.start();
      } catch (error) {
        started = Promise.reject(error);
      }
      next.resolve(started);
    }
    this.#drained();
  }

  #take(): Queued {
    const next = this.#queue[this.#head]!;
    this.#queue[this.#head++] = undefined;
    // Drop the spent front now and then, not on every call (shift() copies the array).
    if (this.#head === this.#queue.length) {
      this.#queue = [];
      this.#head = 0;
    } else if (this.#head >= 1024 && this.#head * 2 >= this.#queue.length) {
      this.#queue = this.#queue.slice(this.#head);
      this.#head = 0;
    }
    return next;
  }

  #shedOne(why: string): OverloadedError {
    this.#shed++;
    if (!this.#shedding) {
      this.#shedding = true;
      this.#onShedding(true, why);
    }
    return new OverloadedError(why);
  }

  /** Shedding ends when nobody waits any more. */
  #drained(): void {
    if (this.#shedding && this.#head === this.#queue.length) {
      this.#shedding = false;
      this.#onShedding(false, `the queue has drained (${this.#shed} calls shed so far)`);
    }
  }

  #arm(delayMs: number): ReturnType<typeof setTimeout> {
    const timer = setTimeout(this.#expire, Math.max(1, Math.ceil(delayMs)));
    // A waiting call keeps the process alive by its request, not by this timer.
    timer.unref?.();
    return timer;
  }

  /** The oldest waiter's deadline passed with no slot freed: shed every waiter past its deadline. */
  readonly #expire = (): void => {
    this.#timer = undefined;
    const nowMs = performance.now();
    while (this.#head < this.#queue.length && this.#queue[this.#head]!.deadlineMs <= nowMs) {
      this.#take().reject(this.#shedOne(`a store call waited over queueTimeoutMs (${this.queueTimeoutMs} ms) for one of ${this.maxInFlight} slots`));
    }
    if (this.#head < this.#queue.length) this.#timer = this.#arm(this.#queue[this.#head]!.deadlineMs - nowMs);
    this.#drained();
  };
}

function whole(name: string, value: number, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new TypeError(`${name} must be an integer ≥ ${min}, got ${String(value)}`);
  return value;
}
