import { StoreUnavailableError } from "../core/limiter.js";

/**
 * The earliest slot (or lease) is further away than the caller agreed to wait.
 * Nothing was consumed: reserve mode and FIFO acquire both refuse all-or-nothing.
 *
 * @example
 * try { await throttle.wait({ maxWaitMs: 1000 }); }
 * catch (error) { if (error instanceof MaxWaitExceededError) queueForLater(error.retryAfterMs); else throw error; }
 */
export class MaxWaitExceededError extends Error {
  /** When the same request could be admitted, in ms from the refusal; null if it never can (cost above capacity). */
  readonly retryAfterMs: number | null;
  /** The wait the caller allowed, in ms. */
  readonly maxWaitMs: number;

  constructor(retryAfterMs: number | null, maxWaitMs: number) {
    const when = retryAfterMs === null ? "can never be admitted (cost above capacity)" : `needs ${retryAfterMs} ms`;
    super(`the next slot ${when}, more than maxWaitMs ${maxWaitMs}`);
    this.name = "MaxWaitExceededError";
    this.retryAfterMs = retryAfterMs;
    this.maxWaitMs = maxWaitMs;
  }
}

/**
 * The limiter could not be reached or answered 503 / 5xx: no decision was made.
 * It is a StoreUnavailableError, so server code that applies `failMode` treats a remote
 * limiter like a local store. A client never treats it as "allowed".
 *
 * @example if (error instanceof LimiterUnavailableError) return new Response("try later", { status: 503 });
 */
export class LimiterUnavailableError extends StoreUnavailableError {
  /** HTTP status when the limiter answered (503, 5xx); undefined for network errors and timeouts. */
  readonly status: number | undefined;

  constructor(message: string, options: { cause?: unknown; status?: number } = {}) {
    super(message, { cause: options.cause });
    this.name = "LimiterUnavailableError";
    this.status = options.status;
  }
}

/**
 * The limiter refused the request itself: bad input (400), bad token (401), unknown policy (404), body too large (413).
 *
 * @example if (error instanceof LimiterRequestError && error.status === 404) console.error(error.detail);
 */
export class LimiterRequestError extends Error {
  readonly status: number;
  /** The problem detail (RFC 9457) the limiter sent, which names the bad field. */
  readonly detail: string;

  constructor(status: number, detail: string, options?: { cause?: unknown }) {
    super(`limiter refused the request (${status}): ${detail}`, options);
    this.name = "LimiterRequestError";
    this.status = status;
    this.detail = detail;
  }
}

/**
 * A lease could not be extended: it expired (or was released) before the call, so the work is no longer protected.
 *
 * @example try { await lease.extend(); } catch (error) { if (error instanceof LeaseLostError) abortWork(); }
 */
export class LeaseLostError extends Error {
  readonly leaseId: string;

  constructor(leaseId: string) {
    super(`lease ${leaseId} is no longer held: it expired or was released`);
    this.name = "LeaseLostError";
    this.leaseId = leaseId;
  }
}

/** Turns a store's own unavailability into the client's typed error; other errors pass unchanged. */
export function asLimiterError(error: unknown): unknown {
  if (error instanceof StoreUnavailableError && !(error instanceof LimiterUnavailableError)) {
    return new LimiterUnavailableError(error.message, { cause: error });
  }
  return error;
}
