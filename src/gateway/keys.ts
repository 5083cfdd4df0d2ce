import { keyFitsBytes } from "../wire.js";
import { type IpAddress, formatIp, maskIp } from "./ip.js";

/** Where a route's rate-limit key comes from (docs/gateway.md). */
export type KeySource =
  | { kind: "ip"; /** IPv6 addresses are aggregated to this prefix (IPv4 is always exact). */ ipv6PrefixBits: number }
  | { kind: "header"; name: string }
  | { kind: "query"; name: string }
  | { kind: "path" }
  | { kind: "const"; value: string };

/**
 * One IPv6 client usually holds a whole /64 and can pick any address in it, so `ip` counts
 * a /64 as one client unless the config says `ip/128`.
 */
export const DEFAULT_IPV6_PREFIX_BITS = 64;

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
export const KEY_SOURCE_FORMS = '"ip", "ip/N" (IPv6 prefix, N from 1 to 128), "header:NAME", "query:NAME", "path" or "const:VALUE"';

/** Parses a key source; returns an error sentence (for the config validator) or the source. */
export function parseKeySource(text: string): KeySource | string {
  const wrong = `must be one of ${KEY_SOURCE_FORMS}, got ${JSON.stringify(text)}`;
  if (text === "ip") return { kind: "ip", ipv6PrefixBits: DEFAULT_IPV6_PREFIX_BITS };
  if (text === "path") return { kind: "path" };
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
  if (kind === "header" || kind === "query") {
    if (kind === "header" && !TOKEN.test(rest)) return `needs a header name after "header:", got ${JSON.stringify(text)}`;
    if (kind === "query" && rest.length === 0) return `needs a parameter name after "query:", got ${JSON.stringify(text)}`;
    return kind === "header" ? { kind, name: rest.toLowerCase() } : { kind, name: rest };
  }
  return wrong;
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
}

/** A key: `value` is what allow/deny lists compare; `storeKey` is what the limiter counts. */
export interface RequestKey {
  value: string;
  storeKey: string;
}

const encoder = new TextEncoder();

/**
 * The key a source yields for a request, or undefined when the request does not carry it
 * (no header, an empty query parameter, no client address): the caller answers 400 or uses
 * the route's fallback, so a missing key is never one empty key shared by everybody.
 * Store keys are namespaced by source (`ip:…`, `header:x-api-key:…`) so one API key and one
 * path that happen to be spelled alike never share a budget; an IP key is shared by every
 * route keyed by `ip`, which is what a per-client budget means.
 * A promise only when the value is long enough to be hashed (await the result either way).
 */
export function keyOf(source: KeySource, facts: RequestFacts): RequestKey | undefined | Promise<RequestKey> {
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
    case "path":
      value = facts.path;
      namespace = "path";
      break;
    case "const":
      value = source.value;
      namespace = "const";
      break;
  }
  if (value === undefined || value === null || value === "") return undefined;
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
    case "path":
      return "the path";
    case "const":
      return `the constant ${JSON.stringify(source.value)}`;
  }
}
