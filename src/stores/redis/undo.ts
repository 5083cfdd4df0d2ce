import { OverloadedError, StoreUnavailableError } from "../../core/limiter.js";

/** First retry after this long; the wait doubles up to MAX_RETRY_DELAY_MS. */
const FIRST_RETRY_DELAY_MS = 25;
const MAX_RETRY_DELAY_MS = 1000;
/** A job is given up after this long at most, whatever its lease: by then Redis has been away for an hour. */
export const MAX_UNDO_MS = 60 * 60 * 1000;
/** Jobs retried at once at most (default); past it a job is dropped and its lease expires on its own. */
export const DEFAULT_MAX_UNDO_JOBS = 10_000;

/** Whether a call failed without an answer from the store: retrying may still land. */
export function unanswered(error: unknown): boolean {
  return error instanceof StoreUnavailableError || error instanceof OverloadedError;
}

interface Job {
  what: string;
  run: () => Promise<unknown>;
  giveUpAtMs: number;
  delayMs: number;
}

/**
 * Frees, in the background, the leases that no caller holds: a release that got no answer
 * (timeout, Redis away, shed), and a lease an acquire may have taken although its caller got
 * an error (the command ran, its answer came late or never). Each job is retried, with a
 * doubling wait up to 1 s, until the store answers (any answer: a lease already gone is fine)
 * or until the lease would have expired on its own (at most MAX_UNDO_MS); at most `maxJobs`
 * wait at once, and past that a job is dropped (logged once per episode): its lease expires
 * on its own, as before.
 *
 * Why it is safe to send such a job at once, before the late answer came: Redis runs a
 * connection's commands in order, so the release runs after the acquire it undoes; releasing
 * a lease that was never granted changes nothing.
 */
export class LeaseUndo {
  readonly #maxJobs: number;
  readonly #log: (line: string) => void;
  readonly #timers = new Set<ReturnType<typeof setTimeout>>();
  #jobs = 0;
  #dropping = false;
  #closed = false;

  constructor(options: { log: (line: string) => void; maxJobs?: number }) {
    this.#log = options.log;
    this.#maxJobs = options.maxJobs ?? DEFAULT_MAX_UNDO_JOBS;
  }

  /** Jobs under way (sent or waiting for their next try). */
  get pending(): number {
    return this.#jobs;
  }

  /** Runs `run` until the store answers it, for at most `forMs` (the lease's length). */
  add(what: string, run: () => Promise<unknown>, forMs: number): void {
    if (this.#closed) return;
    if (this.#jobs >= this.#maxJobs) {
      if (!this.#dropping) this.#log(`spillway: ${this.#jobs} lease releases are being retried already; dropping more (those leases expire on their own)`);
      this.#dropping = true;
      return;
    }
    this.#jobs++;
    this.#try({ what, run, giveUpAtMs: performance.now() + Math.min(forMs, MAX_UNDO_MS), delayMs: FIRST_RETRY_DELAY_MS });
  }

  /** Stops retrying (the store is closing): what is left expires on its own. */
  close(): void {
    this.#closed = true;
    for (const timer of this.#timers) clearTimeout(timer);
    this.#timers.clear();
  }

  #try(job: Job): void {
    let attempt: Promise<unknown>;
    try {
      attempt = job.run();
    } catch (error) {
      attempt = Promise.reject(error);
    }
    attempt.then(
      () => this.#end(),
      (error: unknown) => {
        if (!unanswered(error)) {
          // The store answered with an error (a fault): retrying will not help.
          this.#log(`spillway: ${job.what} failed: ${(error as Error)?.message ?? String(error)}`);
          return this.#end();
        }
        if (this.#closed || performance.now() + job.delayMs >= job.giveUpAtMs) return this.#end();
        const timer = setTimeout(() => {
          this.#timers.delete(timer);
          if (!this.#closed) this.#try(job);
          else this.#end();
        }, job.delayMs);
        timer.unref?.();
        this.#timers.add(timer);
        job.delayMs = Math.min(MAX_RETRY_DELAY_MS, job.delayMs * 2);
      },
    );
  }

  #end(): void {
    this.#jobs--;
    if (this.#jobs === 0) this.#dropping = false;
  }
}
