import { hash } from "node:crypto";

/** SHA-256 of text as hex: names the rate limit service's counters (src/rls/plan.ts), so no caller can pick values that collide with another's counter. */
export function sha256Hex(text: string): string {
  // One-shot (no Hash object): a new client address hashes on its first request.
  return hash("sha256", text);
}
