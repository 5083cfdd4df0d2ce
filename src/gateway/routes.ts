import { type CanonicalPath, isRefused, patternSegment } from "../http/path.js";

/**
 * Route matching by method and path pattern. Patterns are `/exact/path`, `:name` for one
 * segment, `*` for one segment in the middle, and a trailing `/*` for the rest of the path
 * (zero or more segments: `/search/*` matches `/search` and `/search/a/b`).
 *
 * Requests are matched on their canonical path (path.ts), segment by segment after folding:
 * `/%73earch`, `//search/`, `/Search;v=1` and `/search.` all match `/search/*`, as an origin
 * may serve them all as /search. Case-insensitive unless the route says `caseSensitive`.
 */
export interface PathPattern {
  /** Folded segments (lower-cased unless caseSensitive); `null` stands for one arbitrary segment. */
  segments: (string | null)[];
  /** A trailing `/*`: any number of further segments. */
  rest: boolean;
  caseSensitive: boolean;
}

export const HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;

/** Parses a pattern; returns an error sentence (for the config validator) or the pattern. */
export function parsePathPattern(text: string, caseSensitive = false): PathPattern | string {
  if (!text.startsWith("/")) return `must start with "/", got ${JSON.stringify(text)}`;
  if (/[?#]/.test(text)) return `must be a path without a query or fragment, got ${JSON.stringify(text)}`;
  const parts = text.split("/").slice(1);
  if (parts.length === 1 && parts[0] === "") return { segments: [], rest: false, caseSensitive };
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
    else {
      const folded = patternSegment(part);
      if (isRefused(folded)) return `${folded.refused.replace(/^it /, "")}, got ${JSON.stringify(text)}`;
      segments.push(caseSensitive ? folded : folded.toLowerCase());
    }
  }
  return { segments, rest, caseSensitive };
}

/** The request's segments as `pattern` compares them. */
const segmentsFor = (pattern: PathPattern, path: CanonicalPath) => (pattern.caseSensitive ? path.segments : path.lowerSegments);

/**
 * The path as the `path` key source sees it: the folded segments the route compared, so that
 * every spelling an origin serves as one path shares one budget.
 */
export const keyPathOf = (pattern: PathPattern, path: CanonicalPath) => `/${segmentsFor(pattern, path).join("/")}`;

export function matchesPath(pattern: PathPattern, path: CanonicalPath): boolean {
  const segments = segmentsFor(pattern, path);
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

/**
 * The first route (in config order) whose method and path match, and that `also` accepts
 * (match.host and match.headers, match.ts); undefined: none. First match wins: a plan's route
 * goes before the general one.
 */
export function findRoute<R extends { pattern: PathPattern; methods?: ReadonlySet<string> }>(routes: readonly R[], method: string, path: CanonicalPath, also?: (route: R) => boolean): R | undefined {
  for (const route of routes) if ((!route.methods || route.methods.has(method)) && matchesPath(route.pattern, path) && (!also || also(route))) return route;
  return undefined;
}
