/**
 * Redis key layout. Every key of one user key shares the hash tag `{<escaped user key>}`,
 * so all of its policies (and its waiter queue) live in one Cluster slot and a stacked
 * decision runs in one script:
 *
 *   <prefix>{<escaped>}:<policy name>   state of one (key, policy) pair
 *   <prefix>{<escaped>}:~queue          FIFO waiters for leases (zset)
 *   <prefix>{<escaped>}:~waiters        waiter records (hash)
 *
 * `~` cannot start a policy name ([a-z0-9][a-z0-9._-]*), so the two kinds never collide.
 */

export const DEFAULT_KEY_PREFIX = "spillway:";

/** Characters escaped in user keys: `%` (the escape itself), `{` and `}` (hash tags). */
const ESCAPES: Record<string, string> = { "%": "%25", "{": "%7B", "}": "%7D" };
// Lone UTF-16 surrogates: UTF-8 would turn each into U+FFFD, so two different JS strings
// would map to one Redis key; spell them out instead.
const ESCAPED = /[%{}]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;
/** Whether ESCAPED may match at all (any surrogate, paired or not). */
const NEEDS_ESCAPE = /[%{}\uD800-\uDFFF]/;

/**
 * Escapes a user key for use inside a hash tag. Injective (percent-encoding of a few
 * characters, which include `%`), and the result holds no `{` or `}`, so no user key can
 * end the tag early and move into another key's slot.
 *
 * @example escapeUserKey("a{b}") // "a%7Bb%7D"
 */
export function escapeUserKey(userKey: string): string {
  // Most keys need nothing escaped: one cheap test instead of a replace.
  if (!NEEDS_ESCAPE.test(userKey)) return userKey;
  return userKey.replace(ESCAPED, (char) => ESCAPES[char] ?? `%u${char.charCodeAt(0).toString(16).toUpperCase().padStart(4, "0")}`);
}

/** Refuses prefixes that would break the hash tag or the layout. */
export function validateKeyPrefix(prefix: string): string {
  if (/[{}]/.test(prefix)) throw new TypeError(`keyPrefix must not contain "{" or "}", got ${JSON.stringify(prefix)}`);
  return prefix;
}

export interface KeyLayout {
  /** The hash tag, braces included: every key below contains it. */
  tag: string;
  queueKey: string;
  waitersKey: string;
  stateKey(policyName: string): string;
}

export function keyLayout(prefix: string, userKey: string): KeyLayout {
  const tag = `{${escapeUserKey(userKey)}}`;
  const base = `${prefix}${tag}:`;
  return {
    tag,
    queueKey: `${base}~queue`,
    waitersKey: `${base}~waiters`,
    stateKey: (policyName) => `${base}${policyName}`,
  };
}
