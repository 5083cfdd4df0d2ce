import { createHash } from "node:crypto";

/** SHA-256 of text as hex: names the rate limit service's counters (src/rls/plan.ts), so no caller can pick values that collide with another's counter. */
export function sha256Hex(text: string): string {
  return createHash("sha256").update(text).digest("hex");
}
