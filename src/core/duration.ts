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
    return { ok: false, error: `must be a duration like "10s" or a number of ms, got ${describe(value)}` };
  }
  if (!Number.isInteger(ms)) return { ok: false, error: `must be a whole number of milliseconds, got ${describe(value)}` };
  if (ms < 1 || ms > MAX_DURATION_MS) return { ok: false, error: `must be between 1ms and 366d, got ${describe(value)}` };
  return { ok: true, ms };
}

/** Renders a user's value for an error message without dumping huge inputs. */
export function describe(value: unknown): string {
  if (value === undefined) return "nothing";
  const text = preview(value, 3);
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

/**
 * JSON-like text of a value, at most `depth` levels deep and a few items per level. Never
 * JSON.stringify a user's value whole: a body nested 10,000 levels deep overflows its stack,
 * and a 64 KiB one would be rendered only to keep 80 characters of it.
 */
function preview(value: unknown, depth: number): string {
  if (typeof value === "number") return String(value);
  if (typeof value === "string") return JSON.stringify(value.length > 80 ? value.slice(0, 80) : value);
  if (value === null || typeof value !== "object") return String(value);
  if (depth === 0) return Array.isArray(value) ? "[...]" : "{...}";
  if (Array.isArray(value)) {
    const items = value.slice(0, 4).map((item) => preview(item, depth - 1));
    return `[${items.join(",")}${value.length > 4 ? ",..." : ""}]`;
  }
  const entries = Object.entries(value);
  const items = entries.slice(0, 4).map(([name, item]) => `${JSON.stringify(name)}:${preview(item, depth - 1)}`);
  return `{${items.join(",")}${entries.length > 4 ? ",..." : ""}}`;
}
