import { DRY_RUN_HEADER, FAILED_OPEN_HEADER } from "../../core/wire.js";

/**
 * Spillway's own fields as the drafts and README spell them. A web `Headers` (the engine's
 * 429, the gateway's answers) hands names over lower-cased, while a plain record keeps them as
 * written: so that every answer of `spillway serve`, `spillway/node` and the gateway spells them
 * alike, Node edges write names through `spelled`. (Field names are case-insensitive; clients
 * that compare them as strings are not, and a 200 and its 429 should not differ.)
 */
const SPELLINGS: ReadonlyMap<string, string> = new Map(
  ["RateLimit", "RateLimit-Policy", "RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "Retry-After", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset", FAILED_OPEN_HEADER, DRY_RUN_HEADER].map((name) => [name.toLowerCase(), name]),
);

/** `ratelimit-policy` → `RateLimit-Policy`; any other name as given. */
export function spelled(name: string): string {
  return SPELLINGS.get(name.toLowerCase()) ?? name;
}
