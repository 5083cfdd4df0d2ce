import { StoreFaultError, StoreUnavailableError } from "../../core/limiter.js";

/** Reply errors that mean "this node can't serve right now": failMode applies. */
const TRANSIENT_REPLIES = /^(CLUSTERDOWN|TRYAGAIN|LOADING|MASTERDOWN|READONLY|BUSY|MOVED|ASK|NOREPLICAS)\b/;

/** A script's refusal to run past its caller's deadline: "LATE spillway: … nothing done" and Redis's script location. */
const LATE_REPLY = /^LATE (spillway: .*?nothing done)/;

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
  // A call past its deadline (context.lua's read_clock) changed nothing: the store was too slow.
  const late = isReplyError(error) ? LATE_REPLY.exec(error.message) : null;
  if (late) return new StoreUnavailableError(`redis ${what} failed: ${late[1]}`, { cause: error });
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
  /** Infinity until the turn that sent the call has ended (see Deadlines). */
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
 * The clock measures the store, not this process (a burst of thousands of requests parsed in
 * one long turn once made every decision "time out" against a healthy Redis):
 * - a call's timeoutMs starts when its command has been written, not when it was handed to
 *   ioredis: at once when the write went out with the hand-over (nothing held, nothing left in
 *   the socket's buffer: the usual call with few in flight, which then waits no turn), else
 *   when the turn that sent it has ended and the writes held in it are out (coalesce.ts);
 * - a call is rejected one turn after the timer fired, and only if it was due when the timer
 *   fired: the poll phase in between has read every answer that reached the socket by then,
 *   however long this process was busy before;
 * - while the store keeps answering (any call, in the last timeoutMs), it is working through a
 *   queue, and a call waits on, up to capMs (20 × timeoutMs, at least 1 s) past its write.
 * A late answer (or a late error) is swallowed; every error is translated (translateRedisError).
 */
export class Deadlines {
  readonly timeoutMs: number;
  private readonly settled: (error: Error | undefined) => void;
  private head: Waiting | undefined;
  private tail: Waiting | undefined;
  /** The first call whose deadline is not set yet: every call from it to the tail was sent this turn. */
  private unstamped: Waiting | undefined;
  private stampPending = false;
  private timer: ReturnType<typeof setTimeout> | undefined;
  /** When the timer fired for a sweep under way (its grace turn); undefined when none is. */
  private firedMs: number | undefined;
  /** When the store last answered any call (late ones included): it is working through its queue. */
  private lastReplyMs = Number.NEGATIVE_INFINITY;
  /** How long past its write a call may wait at most while the store keeps answering others. */
  readonly capMs: number;

  /** Calls `then` once the writes held now are out and answers true; false when none are held. */
  private readonly afterHeldWrites: (then: () => void) => boolean;
  /** Whether the call just sent is written already (coalesce.ts, sentNow); false when unknown. */
  private readonly sentNow: () => boolean;

  /**
   * `settled` hears every outcome: undefined on a reply, the thrown error otherwise.
   * `afterHeldWrites`: the write coalescer's (coalesce.ts), when writes may be held.
   * `sentNow`: whether the call just handed over is written already (its clock may start at once).
   */
  constructor(timeoutMs: number, settled: (error: Error | undefined) => void = () => {}, afterHeldWrites: (then: () => void) => boolean = () => false, sentNow: () => boolean = () => false) {
    this.timeoutMs = timeoutMs;
    this.capMs = Math.max(1000, 20 * timeoutMs);
    this.settled = settled;
    this.afterHeldWrites = afterHeldWrites;
    this.sentNow = sentNow;
  }

  /**
   * `pending` settled within timeoutMs. `recover`, when given, is asked once about an error
   * of `pending` and answers the promise to wait for instead (same deadline).
   */
  run<T>(pending: Promise<T>, what: string, recover?: (error: unknown) => Promise<T>): Promise<T> {
    // Callbacks are inline and anonymous, the work is in methods: a named closure per call
    // costs a defineProperty where the sources run through tsx (esbuild's keepNames).
    return new Promise<T>((resolve, reject) => {
      const waiting: Waiting = { deadlineMs: Number.POSITIVE_INFINITY, what, reject, prev: this.tail, next: undefined, linked: true };
      if (this.tail) this.tail.next = waiting;
      else this.head = waiting;
      this.tail = waiting;
      if (this.unstamped === undefined && this.sentNow()) {
        // Its write is out already (nothing held, nothing left in the socket's buffer): its clock
        // starts now, without a turn's wait (the usual call when few are in flight).
        waiting.deadlineMs = performance.now() + this.timeoutMs;
        if (this.timer === undefined && this.firedMs === undefined) this.arm(this.head!.deadlineMs - performance.now());
      } else {
        this.unstamped ??= waiting;
        if (!this.stampPending) {
          // One per turn that sends, not one per call.
          this.stampPending = true;
          setImmediate(this.stamp);
        }
      }
      pending.then(
        (value) => this.answer(waiting, value, resolve),
        (error: unknown) => {
          this.lastReplyMs = performance.now();
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
    this.lastReplyMs = performance.now();
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
    if (this.unstamped === waiting) this.unstamped = waiting.next;
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

  /** The turn that sent the unstamped calls has ended: their clocks start when their writes are out. */
  private readonly stamp = (): void => {
    // Writes held to the end of a turn (coalesce.ts) go out in a check phase to come: start the clocks then.
    if (!this.afterHeldWrites(this.stampNow)) this.stampNow();
  };

  private readonly stampNow = (): void => {
    this.stampPending = false;
    const deadlineMs = performance.now() + this.timeoutMs;
    for (let waiting = this.unstamped; waiting; waiting = waiting.next) waiting.deadlineMs = deadlineMs;
    this.unstamped = undefined;
    if (this.timer === undefined && this.firedMs === undefined && this.head) this.arm(this.head.deadlineMs - performance.now());
  };

  /** When the oldest call is due: its deadline while the store is silent, later while it answers others. */
  private dueMs(waiting: Waiting): number {
    const answeringUntilMs = this.lastReplyMs + this.timeoutMs;
    return Math.min(waiting.deadlineMs - this.timeoutMs + this.capMs, Math.max(waiting.deadlineMs, answeringUntilMs));
  }

  private readonly fire = (): void => {
    this.timer = undefined;
    const nowMs = performance.now();
    const head = this.head;
    if (!head || head.deadlineMs === Number.POSITIVE_INFINITY) return; // nothing stamped waits: stamp arms again
    // Armed for a call answered since, or the store answered meanwhile: wait for what is due now.
    if (this.dueMs(head) > nowMs) return this.arm(this.dueMs(head) - nowMs);
    this.firedMs = nowMs;
    setImmediate(this.sweep);
  };

  /**
   * One turn after the timer fired: the poll phase in between has read every answer that
   * reached the socket before then. Rejects the calls due when the timer fired, not those due
   * since (their answers may have come after that read).
   */
  private readonly sweep = (): void => {
    const firedMs = this.firedMs!;
    this.firedMs = undefined;
    let waiting = this.head;
    while (waiting && this.dueMs(waiting) <= firedMs) {
      this.unlink(waiting);
      const waitedMs = firedMs - (waiting.deadlineMs - this.timeoutMs);
      const error = new StoreUnavailableError(
        waitedMs < this.capMs ? `redis ${waiting.what} did not answer within ${this.timeoutMs} ms` : `redis ${waiting.what} did not answer within ${this.capMs} ms (it answered other calls meanwhile)`,
      );
      this.settled(error);
      waiting.reject(error);
      waiting = this.head;
    }
    // A call sent this turn (no deadline yet) is armed for by stamp.
    if (waiting && waiting.deadlineMs !== Number.POSITIVE_INFINITY) this.arm(this.dueMs(waiting) - performance.now());
  };
}
