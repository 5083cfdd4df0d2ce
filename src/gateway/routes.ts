/**
 * Route matching by method and path pattern. Patterns are `/exact/path`, `:name` for one
 * segment, `*` for one segment in the middle, and a trailing `/*` for the rest of the path
 * (zero or more segments: `/search/*` matches `/search` and `/search/a/b`).
 *
 * Paths are compared after the normalizations an origin is likely to apply itself:
 * percent-decoding, collapsing `//`, dropping a trailing `/`. Otherwise `/%73earch` or
 * `//search/` would reach the origin's /search handler without touching its limit.
 */
export interface PathPattern {
  /** Segments; `null` stands for one arbitrary segment. */
  segments: (string | null)[];
  /** A trailing `/*`: any number of further segments. */
  rest: boolean;
}

export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** Parses a pattern; returns an error sentence (for the config validator) or the pattern. */
export function parsePathPattern(text: string): PathPattern | string {
  if (!text.startsWith("/")) return `must start with "/", got ${JSON.stringify(text)}`;
  if (/[?#]/.test(text)) return `must be a path without a query or fragment, got ${JSON.stringify(text)}`;
  const parts = text.split("/").slice(1);
  if (parts.length === 1 && parts[0] === "") return { segments: [], rest: false };
  let rest = false;
  if (parts[parts.length - 1] === "*") {
    rest = true;
    parts.pop();
  }
  const segments: (string | null)[] = [];
  for (const part of parts) {
    if (part === "") return `has an empty segment (//) or a trailing "/", got ${JSON.stringify(text)}`;
    if (part === "*" || /^:[A-Za-z0-9_]+$/.test(part)) segments.push(null);
    else if (part.includes("*") || part.startsWith(":")) return `may use "*" and ":name" only as whole segments, got ${JSON.stringify(text)}`;
    else segments.push(safeDecode(part));
  }
  return { segments, rest };
}

function safeDecode(segment: string): string {
  if (!segment.includes("%")) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

/** A URL path split into decoded segments, with empty segments (`//`, a trailing `/`) dropped. */
export function pathSegments(pathname: string): string[] {
  // A plain loop: this runs for every request the gateway sees.
  const segments: string[] = [];
  for (const part of pathname.split("/")) if (part !== "") segments.push(safeDecode(part));
  return segments;
}

/** The normalized path, as the `path` key source sees it. */
export const normalizedPath = (segments: readonly string[]) => `/${segments.join("/")}`;

export function matchesPath(pattern: PathPattern, segments: readonly string[]): boolean {
  const expected = pattern.segments;
  if (pattern.rest ? segments.length < expected.length : segments.length !== expected.length) return false;
  for (let i = 0; i < expected.length; i++) {
    const want = expected[i];
    if (want !== null && want !== segments[i]) return false;
  }
  return true;
}

/** Methods a route matches; GET brings HEAD along, as every HTTP server treats HEAD as a GET without body. */
export function methodSet(methods: readonly string[] | undefined): ReadonlySet<string> | undefined {
  if (!methods) return undefined;
  const set = new Set(methods);
  if (set.has("GET")) set.add("HEAD");
  return set;
}

/** The first route (in config order) whose method and path match; undefined: none. */
export function findRoute<R extends { pattern: PathPattern; methods?: ReadonlySet<string> }>(routes: readonly R[], method: string, segments: readonly string[]): R | undefined {
  for (const route of routes) if ((!route.methods || route.methods.has(method)) && matchesPath(route.pattern, segments)) return route;
  return undefined;
}
