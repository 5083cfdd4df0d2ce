/**
 * Key sources (docs/gateway.md, docs/overrides.md): where a gateway route's rate-limit key
 * comes from, as the config writes it (`"ip"`, `"header:x-api-key"`, an array for a composite
 * key), and the source's name: the namespace its keys are counted under and the `source` an
 * override names (`"ip"`, `"header:x-api-key"`, `["header:x-api-key", "ip"]`).
 * Here, below the gateway, because config overrides and the store's override tables name
 * sources too.
 */
import { keyFitsBytes } from "../core/wire.js";
import { joinKeyParts } from "./key-parts.js";

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
  /** A field of the request's JSON body (`json:metadata.user_id`): src/gateway/body-fields.ts. */
  | { kind: "json"; path: string[] }
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
  '"ip", "ip/N" (IPv6 prefix, N from 1 to 128), "header:NAME", "query:NAME", "cookie:NAME", "path", "host", "method", "cf:country", "cf:asn", "cf:colo", "json:FIELD" (a dotted path in the JSON body, like "json:metadata.user_id") or "const:VALUE"';

/** At most this many segments in a JSON body path (`metadata.user_id`): fields sit a level or two deep. */
export const MAX_JSON_PATH_SEGMENTS = 16;

/**
 * A dotted path into a JSON document (`usage.total_tokens`, `metadata.user_id`): its segments,
 * or an error sentence. A numeric segment also indexes an array.
 */
export function splitJsonPath(text: string): string[] | string {
  const segments = text.split(".");
  if (text.length > 256 || segments.length > MAX_JSON_PATH_SEGMENTS || segments.some((segment) => segment === "")) {
    return `must be a dotted path of up to ${MAX_JSON_PATH_SEGMENTS} names, like "metadata.user_id", got ${JSON.stringify(text)}`;
  }
  return segments;
}

/** Parses a key source, or a list of them (a composite key); returns an error sentence (for the config validator) or the source. */
export function parseKeySource(text: string | readonly string[]): KeySource | string {
  if (typeof text !== "string") {
    if (text.length === 0) return "must name at least one key source, got []";
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
  if (kind === "json") {
    const path = splitJsonPath(rest);
    return typeof path === "string" ? `needs a field's dotted path after "json:" (${path.replace(/^must be /, "")})` : { kind, path };
  }
  if (kind === "header") return TOKEN.test(rest) ? { kind, name: rest.toLowerCase() } : `needs a header name after "header:", got ${JSON.stringify(text)}`;
  if (kind === "cookie") return TOKEN.test(rest) ? { kind, name: rest } : `needs a cookie name after "cookie:", got ${JSON.stringify(text)}`;
  if (kind === "query") return rest.length > 0 ? { kind, name: rest } : `needs a parameter name after "query:", got ${JSON.stringify(text)}`;
  return wrong;
}


/**
 * A source's name: the namespace its keys are counted under (`ip:203.0.113.9`,
 * `header:x-api-key:acme-1`) and the `source` of the overrides that apply to them. Every
 * `ip/N` is `ip` (the value carries the prefix: `2001:db8:1:200::/56`); a header's name is
 * lower-cased; `const:VALUE` is `const` (the value is the key); a composite's name is its
 * parts' names joined as key parts are, in brackets (`[header:x-api-key|ip]`): "[" starts
 * no single source's name.
 *
 * @example sourceName(parseKeySource(["header:X-Api-Key", "ip/56"]) as KeySource) // "[header:x-api-key|ip]"
 */
export function sourceName(source: KeySource): string {
  switch (source.kind) {
    case "ip":
    case "path":
    case "host":
    case "method":
    case "const":
      return source.kind;
    case "header":
    case "query":
    case "cookie":
      return `${source.kind}:${source.name}`;
    case "cf":
      return `cf:${source.field}`;
    case "json":
      return `json:${source.path.join(".")}`;
    case "composite":
      return `[${joinKeyParts(source.parts.map(sourceName))}]`;
  }
}

const encoder = new TextEncoder();

/**
 * The store key a gateway route counts `value` of the source named `namespace` under
 * (`header:x-api-key:acme-1`): the two joined, or, when that is over 512 bytes (a JWT in a
 * header), `namespace#sha256:<hex of value>`. Synchronous unless it hashes: an await per request
 * is measurable on a proxy's hot path. POST /v1/credits with a `source` names the same key.
 */
export function sourceStoreKey(namespace: string, value: string): string | Promise<string> {
  const storeKey = `${namespace}:${value}`;
  if (keyFitsBytes(storeKey)) return storeKey;
  return crypto.subtle.digest("SHA-256", encoder.encode(value)).then((digest) => {
    const hex = Array.from(new Uint8Array(digest), (byte) => byte.toString(16).padStart(2, "0")).join("");
    return `${namespace}#sha256:${hex}`;
  });
}

/**
 * Store keys that a key given to /v1, RPC or rateLimit() must never name: a gateway route's
 * (`<source name>:<value>`, `<source name>#sha256:…`, a composite's `[…]`), Envoy RLS's
 * (`rls/…`), and the escaped form below itself (`v1:`, `v1#`).
 */
const FOREIGN_STORE_KEY = /^(?:\[|(?:ip|path|host|method|const|header|query|cookie|cf|json)[:#]|rls\/|v1[:#])/;

/**
 * The store key of a key given to /v1, RPC or the middleware: the key itself, unless it is
 * spelled like another surface's store key (`header:x-api-key:victim` is what a gateway route
 * counts the API key `victim` under), which is stored as `v1:<key>`. So a key given to the API
 * never names a route's counter or balance (act on those with an explicit `source`), and every
 * other key keeps the store key it always had: an upgrade loses no count of them. No two keys
 * share a store key: only keys that start with `v1:`/`v1#` or a foreign prefix are changed, and
 * all of them the same way. (At most 515 bytes: the stores take that.)
 *
 * @example apiStoreKey("user:42") // "user:42"
 * @example apiStoreKey("header:x-api-key:victim") // "v1:header:x-api-key:victim"
 */
export function apiStoreKey(key: string): string {
  return FOREIGN_STORE_KEY.test(key) ? `v1:${key}` : key;
}
