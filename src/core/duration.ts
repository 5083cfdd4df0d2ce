import { describeValue } from "./validation.js";

/** Longest period or lease a policy may name: 366 days, in milliseconds. */
export const MAX_DURATION_MS = 366 * 24 * 60 * 60 * 1000;

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
export const DURATION_PATTERN = /^(\d+(?:\.\d+)?)(ms|s|m|h|d)$/;

/**
 * Parses `250ms`, `10s`, `1m`, `1h`, `1d` or a plain number of milliseconds.
 * Returns the whole number of milliseconds, or an error sentence (never throws),
 * so callers can prefix the field name.
 *
 * @example parseDurationMs("1m") // { ok: true, ms: 60000 }
 */
export function parseDurationMs(value: unknown): { ok: true; ms: number } | { ok: false; error: string } {
  let ms: number;
  if (typeof value === "number") {
    ms = value;
  } else if (typeof value === "string") {
    const match = DURATION_PATTERN.exec(value.trim());
    if (!match) return { ok: false, error: `must be a duration like "250ms", "10s", "1m", "1h", "1d" or a number of ms, got ${JSON.stringify(value)}` };
    ms = Number(match[1]) * UNIT_MS[match[2]!]!;
  } else {
    return { ok: false, error: `must be a duration like "10s" or a number of ms, got ${describeValue(value)}` };
  }
  if (!Number.isInteger(ms)) return { ok: false, error: `must be a whole number of milliseconds, got ${describeValue(value)}` };
  if (ms < 1 || ms > MAX_DURATION_MS) return { ok: false, error: `must be between 1ms and 366d, got ${describeValue(value)}` };
  return { ok: true, ms };
}
