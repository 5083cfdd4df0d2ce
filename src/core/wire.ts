/**
 * The wire contract: every string (and the key size) a client or another Worker relies on, in
 * one place. Changing one of these is a breaking change for callers (README "HTTP API"), so
 * nothing else in src/ spells them out.
 * No imports: any layer (client/ included) may read this.
 */

/** Keys are 1 … 512 bytes of UTF-8: the API answers 400 above, and the clients refuse before sending. */
export const MAX_KEY_BYTES = 512;

const encoder = new TextEncoder();

/**
 * Whether `key` is at most MAX_KEY_BYTES of UTF-8. A UTF-16 unit is at most 3 UTF-8 bytes, so
 * most keys are answered without encoding them (this runs on the hot path of every request).
 */
export function keyFitsBytes(key: string): boolean {
  return key.length * 3 <= MAX_KEY_BYTES || encoder.encode(key).length <= MAX_KEY_BYTES;
}

/** Message prefix of an RPC error when the store could not be reached and the policy fails closed: no decision was made. */
export const STORE_UNAVAILABLE_PREFIX = "store unavailable: ";
/** Message prefix of an RPC error when the store answered with an error (a bug or misconfiguration): nothing was admitted. */
export const STORE_FAULT_PREFIX = "store fault: ";
/** Message prefix of an RPC error when Spillway (or a Durable Object) was overloaded and shed the call: nothing was admitted. */
export const OVERLOADED_PREFIX = "overloaded: ";

/**
 * Problem `type`s of the 503s over HTTP. All are 503, but a client must tell them apart: an
 * unreachable store may be failed open by a policy, a store fault or an overload never may.
 */
export const STORE_UNAVAILABLE_TYPE = "urn:spillway:problem:store-unavailable";
export const STORE_FAULT_TYPE = "urn:spillway:problem:store-fault";
/**
 * Problem type of the 503 that sheds load (with Retry-After): Spillway or its store is saturated,
 * nothing was decided, and no failMode admits it. Retry later, not at once.
 */
export const OVERLOADED_TYPE = "urn:spillway:problem:overloaded";
/** Problem type of a 429 (the IANA-registered quota-exceeded type). */
export const QUOTA_EXCEEDED_TYPE = "https://iana.org/assignments/http-problem-types#quota-exceeded";
/** Problem type of the gateway's 504: the origin stayed silent past originTimeoutMs. */
export const ORIGIN_TIMEOUT_TYPE = "urn:spillway:problem:origin-timeout";

/** Set to `true` on answers a `failMode: "open"` policy admitted while the store was down. */
export const FAILED_OPEN_HEADER = "Spillway-Failed-Open";
/** Set on answers of dry-run routes: `allowed` or `denied` (what enforcement would have done), or `error`. */
export const DRY_RUN_HEADER = "Spillway-Dry-Run";
