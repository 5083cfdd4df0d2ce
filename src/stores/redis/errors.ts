import { StoreFaultError, StoreUnavailableError } from "../../limiter.js";

/** Reply errors that mean "this node can't serve right now": failMode applies. */
const TRANSIENT_REPLIES = /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|BUSY|MOVED|ASK|NOREPLICAS)\b/;

function isReplyError(error: Error): boolean {
  // ioredis ReplyError (from redis-errors): the server's own answer.
  return error.name === "ReplyError";
}

/**
 * Maps what an ioredis call threw to the store's contract: connection trouble and
 * transient cluster states become StoreUnavailableError; any other server reply error
 * becomes StoreFaultError.
 */
export function translateRedisError(error: unknown, what: string): Error {
  if (error instanceof StoreUnavailableError || error instanceof StoreFaultError) return error;
  if (!(error instanceof Error)) return new StoreUnavailableError(`redis ${what} failed: ${String(error)}`, { cause: error });
  if (isReplyError(error) && !TRANSIENT_REPLIES.test(error.message)) {
    return new StoreFaultError(`redis ${what} failed: ${error.message}`, { cause: error });
  }
  return new StoreUnavailableError(`redis ${what} failed: ${error.message}`, { cause: error });
}

/**
 * Settles `pending` within `timeoutMs`, or throws StoreUnavailableError. The late answer
 * is swallowed so that it never becomes an unhandled rejection.
 *
 * The rejection waits one more turn (setImmediate runs after the poll phase): when this
 * process itself stalled (GC, CPU), timers fire before sockets are read, and an answer
 * that Redis sent in time would otherwise be thrown away.
 */
export async function withTimeout<T>(pending: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  pending.catch(() => {});
  const timeout = new Promise<never>((_, reject) => {
    const fail = () => reject(new StoreUnavailableError(`redis ${what} did not answer within ${timeoutMs} ms`));
    timer = setTimeout(() => setImmediate(fail), timeoutMs);
  });
  try {
    return await Promise.race([pending, timeout]);
  } catch (error) {
    throw translateRedisError(error, what);
  } finally {
    clearTimeout(timer);
  }
}

/** A call waiting for its reply, in a Deadlines list (oldest first). */
interface Waiting {
  deadlineMs: number;
  what: string;
  reject: (error: Error) => void;
  prev: Waiting | undefined;
  next: Waiting | undefined;
  linked: boolean;
}

/**
 * withTimeout for many calls of one timeout, with one shared timer instead of one per call:
 * calls wait in a list, oldest first (they share timeoutMs, so their deadlines come in list
 * order), and the timer is armed for the oldest one only. When it fires, every call past its
 * deadline throws StoreUnavailableError and the timer moves on to the next one; under load
 * that is about one timer per timeoutMs, not one per call.
 *
 * Same semantics as withTimeout: the rejection waits one more turn (setImmediate) so that an
 * answer Redis sent in time is read first when this process stalled; a late answer (or a late
 * error) is swallowed; every error is translated (translateRedisError).
 */
export class Deadlines {
  readonly timeoutMs: number;
  private readonly settled: (error: Error | undefined) => void;
  private head: Waiting | undefined;
  private tail: Waiting | undefined;
  private timer: ReturnType<typeof setTimeout> | undefined;
  private sweeping = false;

  /** `settled` hears every outcome: undefined on a reply, the thrown error otherwise. */
  constructor(timeoutMs: number, settled: (error: Error | undefined) => void = () => {}) {
    this.timeoutMs = timeoutMs;
    this.settled = settled;
  }

  /**
   * `pending` settled within timeoutMs. `recover`, when given, is asked once about an error
   * of `pending` and answers the promise to wait for instead (same deadline).
   */
  run<T>(pending: Promise<T>, what: string, recover?: (error: unknown) => Promise<T>): Promise<T> {
    // Callbacks are inline and anonymous, the work is in methods: a named closure per call
    // costs a defineProperty where the sources run through tsx (esbuild's keepNames).
    return new Promise<T>((resolve, reject) => {
      const waiting: Waiting = { deadlineMs: performance.now() + this.timeoutMs, what, reject, prev: this.tail, next: undefined, linked: true };
      if (this.tail) this.tail.next = waiting;
      else this.head = waiting;
      this.tail = waiting;
      if (this.timer === undefined && !this.sweeping) this.arm(this.timeoutMs);
      pending.then(
        (value) => this.answer(waiting, value, resolve),
        (error: unknown) => {
          if (!recover || !waiting.linked) return this.fail(waiting, error);
          let retry: Promise<T>;
          try {
            retry = recover(error);
          } catch (thrown) {
            return this.fail(waiting, thrown);
          }
          retry.then(
            (value) => this.answer(waiting, value, resolve),
            (retryError: unknown) => this.fail(waiting, retryError),
          );
        },
      );
    });
  }

  private answer<T>(waiting: Waiting, value: T, resolve: (value: T) => void): void {
    if (!waiting.linked) return; // late: that caller was told already
    this.unlink(waiting);
    this.settled(undefined);
    resolve(value);
  }

  private fail(waiting: Waiting, error: unknown): void {
    if (!waiting.linked) return;
    this.unlink(waiting);
    const translated = translateRedisError(error, waiting.what);
    this.settled(translated);
    waiting.reject(translated);
  }

  private unlink(waiting: Waiting): void {
    waiting.linked = false;
    if (waiting.prev) waiting.prev.next = waiting.next;
    else this.head = waiting.next;
    if (waiting.next) waiting.next.prev = waiting.prev;
    else this.tail = waiting.prev;
    waiting.prev = waiting.next = undefined;
  }

  private arm(delayMs: number): void {
    // Unref'd: a pending call keeps the process alive by its socket, not by this timer.
    this.timer = setTimeout(this.fire, Math.max(1, Math.ceil(delayMs)));
    this.timer.unref?.();
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    this.sweeping = true;
    setImmediate(this.sweep);
  };

  private readonly sweep = (): void => {
    this.sweeping = false;
    const nowMs = performance.now();
    let waiting = this.head;
    while (waiting && waiting.deadlineMs <= nowMs) {
      this.unlink(waiting);
      const error = new StoreUnavailableError(`redis ${waiting.what} did not answer within ${this.timeoutMs} ms`);
      this.settled(error);
      waiting.reject(error);
      waiting = this.head;
    }
    if (waiting) this.arm(waiting.deadlineMs - nowMs);
  };
}
