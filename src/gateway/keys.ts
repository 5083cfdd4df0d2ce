import { keyFitsBytes } from "../wire.js";
import { joinKeyParts } from "../overrides/key-parts.js";
import { type IpAddress, formatIp, maskIp } from "./ip.js";

/** Where a route's rate-limit key comes from (docs/gateway.md, docs/overrides.md). */
export type KeySource =
  | { kind: "ip"; /** IPv6 addresses are aggregated to this prefix (IPv4 is always exact). */ ipv6PrefixBits: number }
  | { kind: "header"; name: string }
  | { kind: "query"; name: string }
  | { kind: "cookie"; name: string }
  | { kind: "path" }
  | { kind: "host" }
  | { kind: "method" }
  | { kind: "cf"; field: CfField }
  | { kind: "const"; value: string }
  /** Every part must be present; their values are joined by joinKeyParts. */
  | { kind: "composite"; parts: KeySource[] };

/** What `cf:` keys read of a Worker's `request.cf`. */
export const CF_FIELDS = ["country", "asn", "colo"] as const;
export type CfField = (typeof CF_FIELDS)[number];

/**
 * One IPv6 client usually holds a whole /64 and can pick any address in it, so `ip` counts
 * a /64 as one client unless the config says `ip/128`.
 */
export const DEFAULT_IPV6_PREFIX_BITS = 64;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const KEY_SOURCE_FORMS =
  '"ip", "ip/N" (IPv6 prefix, N from 1 to 128), "header:NAME", "query:NAME", "cookie:NAME", "path", "host", "method", "cf:country", "cf:asn", "cf:colo" or "const:VALUE"';

/** Parses a key source, or a list of them (a composite key); returns an error sentence (for the config validator) or the source. */
export function parseKeySource(text: string | readonly string[]): KeySource | string {
  if (typeof text !== "string") {
    const parts: KeySource[] = [];
    for (const [i, part] of text.entries()) {
      const parsed = parseKeySource(part);
      if (typeof parsed === "string") return `part ${i}: ${parsed}`;
      if (parsed.kind === "const") return `part ${i}: a constant adds nothing to a composite key, got ${JSON.stringify(part)}`;
      parts.push(parsed);
    }
    if (new Set(text).size !== text.length) return `names one key source twice, got ${JSON.stringify(text)}`;
    return parts.length === 1 ? parts[0]! : { kind: "composite", parts };
  }
  const wrong = `must be one of ${KEY_SOURCE_FORMS}, got ${JSON.stringify(text)}`;
  if (text === "ip") return { kind: "ip", ipv6PrefixBits: DEFAULT_IPV6_PREFIX_BITS };
  if (text === "path" || text === "host" || text === "method") return { kind: text };
  const prefix = /^ip\/(\d{1,3})$/.exec(text);
  if (prefix) {
    const bits = Number(prefix[1]);
    return bits >= 1 && bits <= 128 ? { kind: "ip", ipv6PrefixBits: bits } : `has an IPv6 prefix outside 1 to 128, got ${JSON.stringify(text)}`;
  }
  const colon = text.indexOf(":");
  if (colon < 0) return wrong;
  const kind = text.slice(0, colon);
  const rest = text.slice(colon + 1);
  if (kind === "const") {
    return rest.length > 0 && rest.length <= 256 ? { kind: "const", value: rest } : `needs a constant of 1 to 256 characters after "const:", got ${JSON.stringify(text)}`;
  }
  if (kind === "cf") {
    return (CF_FIELDS as readonly string[]).includes(rest) ? { kind: "cf", field: rest as CfField } : `reads ${CF_FIELDS.map((field) => `"cf:${field}"`).join(", ")} of request.cf, got ${JSON.stringify(text)}`;
  }
  if (kind === "header") return TOKEN.test(rest) ? { kind, name: rest.toLowerCase() } : `needs a header name after "header:", got ${JSON.stringify(text)}`;
  if (kind === "cookie") return TOKEN.test(rest) ? { kind, name: rest } : `needs a cookie name after "cookie:", got ${JSON.stringify(text)}`;
  if (kind === "query") return rest.length > 0 ? { kind, name: rest } : `needs a parameter name after "query:", got ${JSON.stringify(text)}`;
  return wrong;
}

/** The `cf:` parts of a key source (Node has no request.cf: its gateway refuses them). */
export function cfParts(source: KeySource): KeySource[] {
  if (source.kind === "cf") return [source];
  return source.kind === "composite" ? source.parts.filter((part) => part.kind === "cf") : [];
}

/** Reads one request field (a Headers, or the Node edge's view of rawHeaders): repeated fields joined by ", ". */
export type HeaderLookup = Pick<Headers, "get">;

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
}

/** The part of a Worker's `request.cf` keys read. */
export interface CfProperties {
  country?: unknown;
  asn?: unknown;
  colo?: unknown;
}

/** A key: `value` is what allow/deny lists compare; `storeKey` is what the limiter counts. */
export interface RequestKey {
  value: string;
  storeKey: string;
}

const encoder = new TextEncoder();

/** One source's reading of a request: its namespace in store keys and its value. */
interface Part {
  namespace: string;
  value: string;
}

/** The value one (non-composite) source reads, or undefined when the request does not carry it. */
function partOf(source: KeySource, facts: RequestFacts): Part | undefined {
  let value: string | null | undefined;
  let namespace: string;
  switch (source.kind) {
    case "ip": {
      if (!facts.clientIp) return undefined;
      const aggregate = facts.clientIp.version === 6 && source.ipv6PrefixBits < 128;
      value = aggregate ? `${formatIp(maskIp(facts.clientIp, source.ipv6PrefixBits))}/${source.ipv6PrefixBits}` : formatIp(facts.clientIp);
      namespace = "ip";
      break;
    }
    case "header":
      value = facts.headers.get(source.name)?.trim();
      namespace = `header:${source.name}`;
      break;
    case "query":
      value = facts.url.searchParams.get(source.name);
      namespace = `query:${source.name}`;
      break;
    case "cookie":
      value = cookieValue(facts.headers.get("cookie"), source.name);
      namespace = `cookie:${source.name}`;
      break;
    case "path":
      value = facts.path;
      namespace = "path";
      break;
    case "host":
      value = facts.host;
      namespace = "host";
      break;
    case "method":
      value = facts.method;
      namespace = "method";
      break;
    case "cf": {
      const field = facts.cf?.[source.field];
      value = typeof field === "string" || typeof field === "number" ? String(field) : undefined;
      namespace = `cf:${source.field}`;
      break;
    }
    case "const":
      value = source.value;
      namespace = "const";
      break;
    case "composite":
      return compositeOf(source.parts, facts);
  }
  if (value === undefined || value === null || value === "") return undefined;
  return { namespace, value };
}

/** A cookie's value from a Cookie field (`a=1; b=2`), or undefined. */
function cookieValue(field: string | null, name: string): string | undefined {
  if (!field) return undefined;
  for (const pair of field.split(";")) {
    const eq = pair.indexOf("=");
    if (eq > 0 && pair.slice(0, eq).trim() === name) return pair.slice(eq + 1).trim().replace(/^"(.*)"$/, "$1");
  }
  return undefined;
}

function compositeOf(parts: readonly KeySource[], facts: RequestFacts): Part | undefined {
  const values: string[] = [];
  const namespaces: string[] = [];
  for (const source of parts) {
    const part = partOf(source, facts);
    if (!part) return undefined;
    values.push(part.value);
    namespaces.push(part.namespace);
  }
  // "[" never starts a single source's namespace, and the namespaces are joined like the values.
  return { namespace: `[${joinKeyParts(namespaces)}]`, value: joinKeyParts(values) };
}

/** The first part of `source` the request does not carry (for the 400's detail). */
export function missingPart(source: KeySource, facts: RequestFacts): KeySource {
  if (source.kind !== "composite") return source;
  return source.parts.find((part) => !partOf(part, facts)) ?? source;
}

/**
 * The key a source yields for a request, or undefined when the request does not carry it
 * (no header, an empty query parameter, no client address, any part of a composite key): the
 * caller answers 400 or uses the route's fallback, so a missing key is never one empty key
 * shared by everybody.
 * Store keys are namespaced by source (`ip:…`, `header:x-api-key:…`) so one API key and one
 * path that happen to be spelled alike never share a budget; an IP key is shared by every
 * route keyed by `ip`, which is what a per-client budget means.
 * A promise only when the value is long enough to be hashed (await the result either way).
 */
export function keyOf(source: KeySource, facts: RequestFacts): RequestKey | undefined | Promise<RequestKey> {
  const part = partOf(source, facts);
  if (!part) return undefined;
  const { namespace, value } = part;
  const storeKey = `${namespace}:${value}`;
  // A key that fits is answered synchronously: an await per request is measurable on a proxy's hot path.
  if (keyFitsBytes(storeKey)) return { value, storeKey };
  return hashedStoreKey(namespace, value).then((hashed) => ({ value, storeKey: hashed }));
}

/** Long values (a JWT in a header) are hashed: stores take keys of at most 512 bytes. */
async function hashedStoreKey(namespace: string, value: string): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", encoder.encode(value)));
  const hex = Array.from(digest, (byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${namespace}#sha256:${hex}`;
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
    case "const":
      return `the constant ${JSON.stringify(source.value)}`;
    case "composite":
      return source.parts.map(describeKeySource).join(" and ");
  }
}
