/**
 * spillway/client: for callers of rate-limited APIs. Throttle calls to fit a shared limit
 * (never a polling loop), fetch with Retry-After-aware retries, and hold leases of a
 * distributed FIFO semaphore. Runs in Workers and in Node.
 *
 * @example
 * import { createThrottle, throttledFetch, httpLimiter } from "spillway/client";
 * const limiter = httpLimiter({ url: "https://limits.example.com", token });
 * const throttle = createThrottle({ limiter, key: "api.example.com", policy: "upstream" });
 * const fetchApi = throttledFetch({ throttle });
 */
export { createThrottle, Throttle, type ThrottleOptions, type WaitOptions, type Ticket } from "./throttle.js";
export { Reservation } from "./reservation.js";
export { throttledFetch, type ThrottledFetchOptions, type FetchLike, type RetryEvent } from "./fetch.js";
export { createSemaphore, Semaphore, Lease, type SemaphoreOptions, type AcquireCallOptions } from "./semaphore.js";
export { httpLimiter, bindingLimiter, type HttpLimiterOptions, type SpillwayBinding } from "./limiters.js";
export {
  parseRetryAfter,
  parseHttpDate,
  parseRateLimit,
  parseRateLimitPolicy,
  readRateLimitHeaders,
  waitHintMs,
  DEFAULT_MAX_HINT_MS,
  type HintOptions,
  type RateLimitHints,
  type RateLimitPolicyInfo,
  type RateLimitState,
} from "./retry-after.js";
export { MaxWaitExceededError, LimiterUnavailableError, LimiterRequestError, LeaseLostError } from "./errors.js";
// A remote store fault (bindingLimiter) reaches callers as the same class an in-process store throws.
export { OverloadedError, StoreFaultError } from "../core/limiter.js";
export { OVERLOADED_PREFIX, STORE_UNAVAILABLE_PREFIX, STORE_FAULT_PREFIX } from "../core/wire.js";
export { type PolicyItem, type PolicyRef, type PolicySpec, type RemoteLimiter } from "./target.js";
