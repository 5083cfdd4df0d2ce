import type { HeaderLookup } from "./keys.js";

/**
 * Route matching beyond method and path (docs/overrides.md, "Plans"): the request's Host and
 * fields. A plan is a route: `{ "match": { "path": "/api/*", "headers": { "x-plan": "pro" } } }`
 * placed before the general route, since routes are tried in order and the first match wins.
 */
export interface RequestMatch {
  /** Exact host, or `*.example.com` (any subdomain, not example.com itself); lower case, no port. */
  host?: { exact: string } | { suffix: string };
  /** Every listed field must match: one of `values` (case-sensitive), or present when `values` is undefined. */
  headers?: { name: string; values: readonly string[] | undefined }[];
}

const HOST = /^(?:\*\.)?[a-z0-9-]+(?:\.[a-z0-9-]+)*\.?$/;
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;

/** Parses `match.host`; returns an error sentence (for the config validator) or the matcher. */
export function parseHostMatch(text: string): RequestMatch["host"] | string {
  const host = text.toLowerCase().replace(/\.$/, "");
  if (!HOST.test(host)) return `must be a host name like "api.example.com" or "*.example.com" (no port, no path), got ${JSON.stringify(text)}`;
  return host.startsWith("*.") ? { suffix: host.slice(1) } : { exact: host };
}

/** Parses `match.headers`; returns an error (field under match.headers, sentence) or the matchers. */
export function parseHeaderMatch(headers: Record<string, string | string[] | true>): NonNullable<RequestMatch["headers"]> | { field: string; error: string } {
  const matchers: NonNullable<RequestMatch["headers"]> = [];
  for (const [name, want] of Object.entries(headers)) {
    if (!TOKEN.test(name)) return { field: name, error: `must be a header name, got ${JSON.stringify(name)}` };
    const lower = name.toLowerCase();
    if (lower === "host") return { field: name, error: 'is matched by match.host, not match.headers' };
    matchers.push({ name: lower, values: want === true ? undefined : typeof want === "string" ? [want] : want });
  }
  return matchers;
}

/** The request's host as match.host compares it: lower case, without port or trailing dot. */
export function normalHost(host: string | null | undefined): string | undefined {
  if (!host) return undefined;
  let bare = host;
  if (bare.startsWith("[")) bare = bare.slice(0, bare.indexOf("]") + 1);
  else {
    const colon = bare.lastIndexOf(":");
    if (colon >= 0) bare = bare.slice(0, colon);
  }
  return bare.toLowerCase().replace(/\.$/, "") || undefined;
}

/** Whether a request with this (normalised) host and these fields meets `match`. */
export function matchesRequest(match: RequestMatch, host: () => string | undefined, headers: HeaderLookup): boolean {
  if (match.host) {
    const actual = host();
    if (!actual) return false;
    if ("exact" in match.host ? actual !== match.host.exact : !actual.endsWith(match.host.suffix)) return false;
  }
  if (match.headers) {
    for (const { name, values } of match.headers) {
      const value = headers.get(name);
      if (value === null) return false;
      if (values && !values.includes(value.trim())) return false;
    }
  }
  return true;
}
