import { joinKeyParts } from "../overrides/key-parts.js";
import { type KeySource, sourceName, sourceStoreKey } from "../overrides/key-source.js";
import { type IpAddress, prefixKey } from "./ip.js";
import type { BodyFields } from "./body-fields.js";

export { type CfField, type KeySource, CF_FIELDS, DEFAULT_IPV6_PREFIX_BITS, KEY_SOURCE_FORMS, parseKeySource } from "../overrides/key-source.js";

/** The body paths a key source reads (`json:` parts), for the route's body read. */
export function jsonPaths(source: KeySource | undefined): string[][] {
  if (!source) return [];
  if (source.kind === "json") return [source.path];
  return source.kind === "composite" ? source.parts.flatMap((part) => (part.kind === "json" ? [part.path] : [])) : [];
}

/** The `cf:` parts of a key source (Node has no request.cf: its gateway refuses them). */
export function cfParts(source: KeySource): KeySource[] {
  if (source.kind === "cf") return [source];
  return source.kind === "composite" ? source.parts.filter((part) => part.kind === "cf") : [];
}

/**
 * Reads one request field (a Headers, or the Node edge's view of rawHeaders): repeated fields
 * joined by ", ". `repeated` says whether the field arrived on more than one line: only Node can
 * tell (a Worker's runtime joins the lines before the Worker sees them), so a Headers has none.
 */
export type HeaderLookup = Pick<Headers, "get"> & { repeated?(lowerName: string): boolean };

/**
 * What a source reads from a request that carries it more than once (`?k=a&k=b`, two `sid`
 * cookies, one header field on two lines): the route keys on one value, so such a request is
 * refused (400) rather than counted under one of them while the origin may read another.
 */
export const REPEATED: unique symbol = Symbol("repeated key source");
type Value = string | undefined | typeof REPEATED;

/** The parts of a request a key can come from. */
export interface RequestFacts {
  clientIp: IpAddress | undefined;
  headers: HeaderLookup;
  url: URL;
  /** The path as the matched route compared it: canonical, folded segments (routes.ts keyPathOf). */
  path: string;
  /** The request method (for `method` keys). */
  method?: string;
  /** The Host, lower-cased, without its port (for `host` keys). */
  host?: string;
  /** A Worker's `request.cf` (for `cf:` keys); undefined on Node. */
  cf?: CfProperties;
  /** The body's fields (for `json:` keys), read when the route reads any (body-fields.ts). */
  body?: BodyFields;
}

/** The part of a Worker's `request.cf` keys read. */
export interface CfProperties {
  country?: unknown;
  asn?: unknown;
  colo?: unknown;
}

/**
 * A key: `value` is what allow/deny lists and overrides compare; `source` is the name of the
 * source that read it (key-source.ts sourceName: a route's `fallbackKey` has its own), which
 * scopes the overrides it may use; `storeKey` is what the limiter counts.
 */
export interface RequestKey {
  value: string;
  source: string;
  storeKey: string;
}

/** The value one source reads, undefined when the request does not carry it, REPEATED when it carries it twice. */
function valueOf(source: KeySource, facts: RequestFacts): Value {
  let value: string | null | undefined;
  switch (source.kind) {
    case "ip": {
      if (!facts.clientIp) return undefined;
      value = prefixKey(facts.clientIp, source.ipv6PrefixBits);
      break;
    }
    case "header":
      value = facts.headers.get(source.name)?.trim();
      if (value && facts.headers.repeated?.(source.name)) return REPEATED;
      break;
    case "query": {
      const values = facts.url.searchParams.getAll(source.name);
      if (values.length > 1) return REPEATED;
      value = values[0];
      break;
    }
    case "cookie": {
      const found = cookieValue(facts.headers.get("cookie"), source.name);
      if (found === REPEATED) return REPEATED;
      value = found;
      break;
    }
    case "path":
      value = facts.path;
      break;
    case "host":
      value = facts.host;
      break;
    case "method":
      value = facts.method;
      break;
    case "cf": {
      const field = facts.cf?.[source.field];
      value = typeof field === "string" || typeof field === "number" ? String(field) : undefined;
      break;
    }
    case "json": {
      // A field the body names twice is refused as a repeated query parameter is; one that is not a string or number is absent.
      const field = facts.body?.field(source.path);
      if (!field?.found) return field?.repeated ? REPEATED : undefined;
      value = typeof field.value === "string" ? field.value : typeof field.value === "number" && Number.isFinite(field.value) ? String(field.value) : undefined;
      break;
    }
    case "const":
      value = source.value;
      break;
    case "composite":
      return compositeOf(source.parts, facts);
  }
  if (value === undefined || value === null || value === "") return undefined;
  return value;
}

/**
 * A cookie's value from a Cookie field (`a=1; b=2`), undefined, or REPEATED when the name comes
 * twice (`sid=a; sid=b`). Two Cookie lines are one field joined by "; " on Node (as node:http
 * joins them) but by ", " in a Worker's runtime: a comma, which no cookie value may hold
 * (RFC 6265 cookie-octet), also parts pairs when the name is counted.
 */
function cookieValue(field: string | null, name: string): Value {
  if (!field) return undefined;
  let value: string | undefined;
  let seen = 0;
  for (const pair of field.split(";")) {
    const eq = pair.indexOf("=");
    if (eq > 0 && pair.slice(0, eq).trim() === name) value ??= pair.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
    if (pair.includes(",")) {
      for (const part of pair.split(",")) if (part.slice(0, Math.max(0, part.indexOf("="))).trim() === name) seen++;
    } else if (eq > 0 && pair.slice(0, eq).trim() === name) seen++;
    if (seen > 1) return REPEATED;
  }
  return value;
}

/** Every part's value joined; undefined or REPEATED as soon as one part is. */
function compositeOf(parts: readonly KeySource[], facts: RequestFacts): Value {
  const values: string[] = [];
  for (const source of parts) {
    const value = valueOf(source, facts);
    if (value === undefined || value === REPEATED) return value;
    values.push(value);
  }
  return joinKeyParts(values);
}

/** Each source's name, worked out once (a route's key source lives as long as its config). */
const names = new WeakMap<KeySource, string>();
function nameOf(source: KeySource): string {
  let name = names.get(source);
  if (name === undefined) names.set(source, (name = sourceName(source)));
  return name;
}

/** The first part of `source` the request does not carry, or carries twice (for the 400's detail). */
export function missingPart(source: KeySource, facts: RequestFacts): KeySource {
  if (source.kind !== "composite") return source;
  return source.parts.find((part) => {
    const value = valueOf(part, facts);
    return value === undefined || value === REPEATED;
  }) ?? source;
}

/**
 * The key a source yields for a request, or undefined when the request does not carry it
 * (no header, an empty query parameter, no client address, any part of a composite key): the
 * caller answers 400 or uses the route's fallback, so a missing key is never one empty key
 * shared by everybody. REPEATED when the request carries the source (or a part) more than
 * once: the caller answers 400, fallback or not.
 * Store keys are namespaced by source (`ip:…`, `header:x-api-key:…`) so one API key and one
 * path that happen to be spelled alike never share a budget; an IP key is shared by every
 * route keyed by `ip`, which is what a per-client budget means.
 * A promise only when the value is long enough to be hashed (await the result either way).
 */
export function keyOf(source: KeySource, facts: RequestFacts): RequestKey | undefined | typeof REPEATED | Promise<RequestKey> {
  const value = valueOf(source, facts);
  if (value === undefined || value === REPEATED) return value;
  const namespace = nameOf(source);
  // A key that fits is answered synchronously: an await per request is measurable on a proxy's hot path.
  const storeKey = sourceStoreKey(namespace, value);
  if (typeof storeKey === "string") return { value, source: namespace, storeKey };
  return storeKey.then((hashed) => ({ value, source: namespace, storeKey: hashed }));
}

/** Describes a key source for a 400 detail: what the request should have carried. */
export function describeKeySource(source: KeySource): string {
  switch (source.kind) {
    case "ip":
      return "the client address";
    case "header":
      return `the ${source.name} header`;
    case "query":
      return `the ${source.name} query parameter`;
    case "cookie":
      return `the ${source.name} cookie`;
    case "path":
      return "the path";
    case "host":
      return "the Host";
    case "method":
      return "the method";
    case "cf":
      return `request.cf.${source.field} (Cloudflare)`;
    case "json":
      return `the body's JSON field ${source.path.join(".")}`;
    case "const":
      return `the constant ${JSON.stringify(source.value)}`;
    case "composite":
      return source.parts.map(describeKeySource).join(" and ");
  }
}
