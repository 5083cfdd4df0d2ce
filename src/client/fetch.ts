import { describeValue } from "../core/validation.js";
import { booleanOption, functionOption, integerOption, sleepOrThrow } from "./options.js";
import { MAX_TIMER_MS } from "../core/sleep.js";
import { waitHintMs } from "./retry-after.js";
import { Throttle } from "./throttle.js";
import type { Reservation } from "./reservation.js";

/** What throttledFetch returns: a drop-in `fetch`. */
export type FetchLike = (input: Request | string | URL, init?: RequestInit) => Promise<Response>;

export interface RetryEvent {
  /** The attempt that failed, from 1. */
  attempt: number;
  /** Wait before the next attempt, in ms. */
  delayMs: number;
  /** The status that caused the retry; undefined for a network error. */
  status?: number;
  error?: unknown;
}

export interface ThrottledFetchOptions {
  /** The fetch to wrap (default: the global one). */
  fetch?: FetchLike;
  /** Reserve a slot before every attempt; the server's waits pause it too. */
  throttle?: Throttle;
  /** Attempts in all, the first included (default 4; 1 = never retry). */
  maxAttempts?: number;
  /** No retry starts once this much time (ms) would be spent in all (default 60 000). */
  maxTotalMs?: number;
  /** First backoff step in ms when the server gives no hint (default 200); doubles per attempt, jittered. */
  baseDelayMs?: number;
  /** Longest single wait in ms (default 30 000): a server asking for more gets its answer returned, not retried. */
  maxDelayMs?: number;
  /** Statuses that mean "later" (default 429 and 503). */
  retryStatuses?: readonly number[];
  /** Retry POST and PATCH too (default false: only idempotent methods, RFC 9110 §9.2.2). */
  retryNonIdempotent?: boolean;
  /** Feed the server's Retry-After into the throttle's shared limiter, so every caller of the key pauses (default false). */
  shareRetryAfter?: boolean;
  /** Random numbers in [0, 1) for jitter (tests inject one). */
  random?: () => number;
  /** Called before each retry's wait. */
  onRetry?: (event: RetryEvent) => void;
  /**
   * Reserve, then settle (needs `throttle` and `usage`): the units each attempt reserves, read
   * from a copy of the request (an LLM call's `max_tokens` plus its prompt), instead of a
   * slot of 1. An integer from 1 to 1e9; anything else throws a TypeError before any attempt.
   */
  estimate?: (request: Request) => number | Promise<number>;
  /**
   * What an answer used, read from a copy of it once it is returned (its JSON `usage`, a
   * stream's last event): the attempt's reservation settles with it, off the caller's path.
   * undefined (or anything but an integer from 0 to 1e9) keeps the reservation as it is. An
   * answer that is retried (429, 503) used nothing: its reservation is given back whole. A
   * network error keeps it (the origin may have done the work).
   */
  usage?: (response: Response) => number | undefined | Promise<number | undefined>;
}

const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);

/**
 * Wraps fetch for calling a rate-limited API: waits for a throttle slot before each
 * attempt, and on 429 / 503 waits as the server says (Retry-After in seconds or as an
 * HTTP-date, RateLimit / RateLimit-Policy, X-RateLimit-*), or backs off exponentially with
 * jitter when it says nothing. Retries are bounded in count and in total time; when they
 * run out, the last answer is returned as is. A success that says no quota remains
 * pauses later calls until the reset.
 *
 * @example
 * const fetchApi = throttledFetch({ throttle, maxAttempts: 5, shareRetryAfter: true });
 * const response = await fetchApi("https://api.example.com/items/1");
 */
export function throttledFetch(options: ThrottledFetchOptions = {}): FetchLike {
  if (typeof options !== "object" || options === null) throw new TypeError(`options: must be an object, got ${describeValue(options)}`);
  const fetchImpl = functionOption<FetchLike>("fetch", options.fetch, undefined) ?? ((input, init) => globalThis.fetch(input, init));
  if (options.throttle !== undefined && !(options.throttle instanceof Throttle)) throw new TypeError(`throttle: must come from createThrottle(), got ${describeValue(options.throttle)}`);
  const throttle = options.throttle;
  const maxAttempts = integerOption("maxAttempts", options.maxAttempts, 1, 100, 4);
  const maxTotalMs = integerOption("maxTotalMs", options.maxTotalMs, 0, MAX_TIMER_MS, 60_000);
  const baseDelayMs = integerOption("baseDelayMs", options.baseDelayMs, 1, MAX_TIMER_MS, 200);
  const maxDelayMs = integerOption("maxDelayMs", options.maxDelayMs, 1, MAX_TIMER_MS, 30_000);
  const retryStatuses = statusesOption(options.retryStatuses);
  const retryNonIdempotent = booleanOption("retryNonIdempotent", options.retryNonIdempotent, false);
  const shareRetryAfter = booleanOption("shareRetryAfter", options.shareRetryAfter, false);
  if (shareRetryAfter && !throttle) throw new TypeError("shareRetryAfter: needs a throttle whose limiter is shared, got no throttle");
  const random = functionOption<() => number>("random", options.random, Math.random)!;
  const onRetry = functionOption<(event: RetryEvent) => void>("onRetry", options.onRetry, undefined);
  const estimateOf = functionOption<(request: Request) => number | Promise<number>>("estimate", options.estimate, undefined);
  const usageOf = functionOption<(response: Response) => number | undefined | Promise<number | undefined>>("usage", options.usage, undefined);
  if ((estimateOf === undefined) !== (usageOf === undefined)) throw new TypeError(`${estimateOf ? "usage" : "estimate"}: reserve, then settle needs both estimate (what an attempt reserves) and usage (what settles it), got only ${estimateOf ? "estimate" : "usage"}`);
  if (estimateOf && !throttle) throw new TypeError("estimate: reserves on a throttle, got no throttle");

  // Without a throttle, the pause a server asks for still holds for every call through this function.
  let pausedUntilMs = 0;
  const pause = async (waitMs: number, shared: boolean) => {
    if (throttle) await throttle.pause(Math.min(waitMs, MAX_TIMER_MS), { shared });
    else pausedUntilMs = Math.max(pausedUntilMs, Date.now() + waitMs);
  };
  const backoffMs = (attempt: number) => {
    const capMs = Math.min(maxDelayMs, baseDelayMs * 2 ** (attempt - 1));
    return Math.ceil(capMs / 2 + (random() * capMs) / 2);
  };
  // A server's wait is a floor: jitter only adds (at most 10%, at most 1 s), so retries of many callers spread out.
  const jitteredMs = (hintMs: number) => hintMs + Math.floor(random() * Math.min(1000, hintMs / 10));

  return async function fetchWithRetries(input, init) {
    const request = new Request(input, init);
    const signal = request.signal;
    const retryable = retryNonIdempotent || IDEMPOTENT.has(request.method.toUpperCase());
    const startMs = Date.now();
    // Read once from a copy: every attempt reserves the same estimate.
    const estimate = estimateOf ? integerOption("estimate", await estimateOf(request.clone()), 1, 1e9, 1) : undefined;
    for (let attempt = 1; ; attempt++) {
      await sleepOrThrow(pausedUntilMs - Date.now(), signal);
      let reservation: Reservation | undefined;
      if (throttle && estimate !== undefined) reservation = await throttle.reserve(estimate, { signal });
      else if (throttle) await throttle.wait({ signal });
      const mayRetry = retryable && attempt < maxAttempts;
      let response: Response;
      try {
        // A body can be read once: every attempt that may be followed by another sends a copy.
        response = await fetchImpl(mayRetry ? request.clone() : request);
      } catch (error) {
        if (signal.aborted || !mayRetry) throw error;
        const delayMs = backoffMs(attempt);
        if (Date.now() - startMs + delayMs > maxTotalMs) throw error;
        onRetry?.({ attempt, delayMs, error });
        await sleepOrThrow(delayMs, signal);
        continue;
      }
      const hintMs = waitHintMs(response.headers);
      // Waits beyond maxDelayMs are not ours to impose: that answer goes back to the caller instead.
      const pauseMs = hintMs !== undefined && hintMs > 0 && hintMs <= maxDelayMs ? hintMs : undefined;
      if (!retryStatuses.has(response.status)) {
        if (pauseMs !== undefined) await pause(pauseMs, false);
        if (reservation) settleFrom(reservation, response, usageOf!);
        return response;
      }
      if (pauseMs !== undefined) await pause(pauseMs, shareRetryAfter);
      if (!mayRetry) {
        if (reservation) settleFrom(reservation, response, usageOf!);
        return response;
      }
      const delayMs = hintMs === undefined ? backoffMs(attempt) : jitteredMs(hintMs);
      if (delayMs > maxDelayMs || Date.now() - startMs + delayMs > maxTotalMs) {
        if (reservation) settleFrom(reservation, response, usageOf!);
        return response;
      }
      // Retried: the origin refused this attempt, which used nothing.
      if (reservation) void reservation.settle(0).catch(() => undefined);
      // Free the connection: this answer's body will never be read.
      await response.body?.cancel().catch(() => undefined);
      onRetry?.({ attempt, delayMs, status: response.status });
      await sleepOrThrow(delayMs, signal);
    }
  };
}

/**
 * Settles an attempt's reservation with what its answer used, read from a copy, off the
 * caller's path. A usage that cannot be read or is unusable keeps the reservation; a settle
 * the limiter fails keeps it too (nobody waits to be told).
 */
function settleFrom(reservation: Reservation, response: Response, usageOf: (response: Response) => number | undefined | Promise<number | undefined>): void {
  const copy = response.clone();
  void Promise.resolve()
    .then(() => usageOf(copy))
    .then((used) => reservation.settle(typeof used === "number" && Number.isInteger(used) && used >= 0 && used <= 1e9 ? used : undefined))
    .catch(() => undefined);
}

function statusesOption(value: unknown): Set<number> {
  if (value === undefined) return new Set([429, 503]);
  if (!Array.isArray(value) || value.some((status) => !Number.isInteger(status) || status < 100 || status > 599)) {
    throw new TypeError(`retryStatuses: must be an array of HTTP statuses (100 to 599), got ${describeValue(value)}`);
  }
  return new Set(value as number[]);
}
