const GO_UNITS_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, "µs": 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * A duration as Go's time.ParseDuration reads it (`24h`, `1h30m`, `1s500ms`, `0.25s`, `0`), in
 * milliseconds, not rounded; undefined for text that is not one. Both commands read durations
 * from the environment this way (REDIS_TIMEOUT means the same to `serve` and `rls`).
 */
export function goDurationMs(text: string): number | undefined {
  if (text === "0") return 0;
  const parts = [...text.matchAll(/(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)/g)];
  if (parts.length === 0 || parts.map((part) => part[0]).join("") !== text) return undefined;
  return parts.reduce((total, part) => total + Number(part[1]) * GO_UNITS_MS[part[2]!]!, 0);
}
