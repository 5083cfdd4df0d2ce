import type { SpillwayConfig } from "../config/config.js";
import { UnknownPolicyError, resolvePolicies } from "../core/policy.js";
import type { Policy } from "../core/types.js";
import { ValidationError, describeValue, parseWith } from "../core/validation.js";
import { routeSchema } from "../config/schema.js";
import { type AccessList, parseAccessList } from "./access.js";
import { type RouteCounting, parseRouteCounting } from "./counting.js";
import type { ProviderHeaders } from "../core/provider-headers.js";
import { parseProviderHeaders } from "./provider-headers-config.js";
import { type IpRange, parseIpRange } from "./ip.js";
import { type KeySource, jsonPaths, parseKeySource } from "./keys.js";
import { type BodyRead, DEFAULT_REQUEST_READ_BYTES, REQUEST_READ_BYTES_RANGE } from "./body-fields.js";
import { type PoliciesBy, parsePoliciesBy } from "./policies-by.js";
import { REQUEST_MODEL_PATH } from "./measures.js";
import { type RequestMatch, parseHeaderMatch, parseHostMatch } from "./match.js";
import { HTTP_METHODS, type PathPattern, methodSet, parsePathPattern } from "./routes.js";

/** The state name under which an origin's Retry-After pauses a key (see feedback.ts). */
export const ORIGIN_PAUSE_POLICY = "origin-retry-after";

/** One validated route of the gateway. */
export interface GatewayRoute {
  /** `routes.0`: where the route sits in the config, for logs. */
  field: string;
  /** The path pattern as written, for logs. */
  path: string;
  pattern: PathPattern;
  /** Undefined: every method. */
  methods?: ReadonlySet<string>;
  /** match.host and match.headers; undefined when the route sets neither. */
  request?: RequestMatch;
  key: KeySource;
  /** Used when the request does not carry `key` (else the request is a 400). */
  fallbackKey?: KeySource;
  policies: Policy[];
  onLimit: "reject" | "delay";
  /** delay only: the longest a request is held for its reserved slot. */
  maxDelayMs: number;
  /** Never blocks; reports what would have happened in headers and logs. */
  dryRun: boolean;
  /** The route's own, else the config's originTimeoutMs. */
  originTimeoutMs: number;
  /** `count` and `cost` (counting.ts); undefined: one unit per request, checked before forwarding. */
  counting?: RouteCounting;
  /** Policies picked by a body field (policies-by.ts): each request's stack is one of these. */
  policiesBy?: PoliciesBy;
  /** What the route reads of the request body (`json:` keys, a requestJson estimate, policiesBy); undefined: nothing. */
  bodyRead?: BodyRead;
  /** The provider's own rate-limit fields beside the IETF ones (core/provider-headers.ts); undefined: none. */
  providerHeaders?: ProviderHeaders;
}

/** The validated gateway part of a config (docs/gateway.md). */
export interface GatewayConfig {
  /** Base URL requests are forwarded to; its path (if any) prefixes the request's path. */
  origin: URL;
  routes: GatewayRoute[];
  /** Proxies whose X-Forwarded-For is believed; empty: the header is never read. */
  trustProxy: IpRange[];
  /** Never limited: addresses, and keys from the source each names (access.ts). */
  allow: AccessList;
  /** Always refused (403): addresses, and keys from the source each names or from every source. */
  deny: AccessList;
  /** An origin 429 with Retry-After pauses that key for every caller until then. */
  originFeedback: boolean;
  /**
   * The longest the origin may stay silent, in ms: until its answer's headers (the client then
   * gets a 504), and between two chunks of its answer's body (the answer is then cut). Routes
   * may set their own; this one also covers requests no route matches.
   */
  originTimeoutMs: number;
  legacyHeaders: boolean;
}

/** Turns an error sentence from a small parser into a ValidationError naming the field. */
function orThrow<T>(result: T | string, field: string): T {
  if (typeof result === "string") throw new ValidationError(field, result);
  return result;
}

function parseOrigin(text: string): URL {
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    throw new ValidationError("origin", `must be an absolute http(s) URL like "https://api.example.com", got ${describeValue(text)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new ValidationError("origin", `must use http or https, got ${describeValue(text)}`);
  if (url.search || url.hash) throw new ValidationError("origin", `must not carry a query or fragment (the request's own are forwarded), got ${describeValue(text)}`);
  if (url.username || url.password) throw new ValidationError("origin", "must not carry credentials: the request's own Authorization is forwarded");
  return url;
}

function parseRoute(input: unknown, index: number, config: SpillwayConfig, originTimeoutMs: number): GatewayRoute {
  const field = `routes.${index}`;
  const raw = parseWith(routeSchema, input, field);
  const methods = raw.match.methods?.map((method, i) => {
    const upper = method.toUpperCase();
    if (!(HTTP_METHODS as readonly string[]).includes(upper)) throw new ValidationError(`${field}.match.methods.${i}`, `must be one of ${HTTP_METHODS.join(", ")}, got ${describeValue(method)}`);
    return upper;
  });
  let policies: Policy[] = [];
  try {
    // With policiesBy, the route's own policies are optional: every request's stack starts with them.
    if (raw.policies !== undefined || raw.policiesBy === undefined) policies = resolvePolicies(raw.policies, config.catalog, `${field}.policies`);
  } catch (error) {
    // A route naming a policy the config lacks is a config error like any other.
    if (error instanceof UnknownPolicyError) throw new ValidationError(error.field, error.message.slice(error.field.length + 2));
    throw error;
  }
  const policiesBy = raw.policiesBy === undefined ? undefined : parsePoliciesBy(raw.policiesBy, policies, config.catalog, `${field}.policiesBy`);
  // Every policy a request of the route may be limited by, for the checks below and counting's defaults.
  const everyPolicy = policiesBy ? [...new Map([...policiesBy.stacks.values(), policiesBy.fallback].flat().map((policy) => [policy.name, policy])).values()] : policies;
  const pause = everyPolicy.find((policy) => policy.name === ORIGIN_PAUSE_POLICY);
  if (pause) throw new ValidationError(`${field}.policies`, `"${ORIGIN_PAUSE_POLICY}" is reserved for origin feedback; rename the policy`);
  if (raw.onLimit === "delay" && raw.maxDelayMs === 0) throw new ValidationError(`${field}.maxDelayMs`, 'must be above 0 when onLimit is "delay" (how long a request may be held), got 0');
  if (raw.onLimit === "reject" && raw.maxDelayMs > 0) throw new ValidationError(`${field}.maxDelayMs`, `is only used with onLimit "delay", got ${raw.maxDelayMs} with "reject"`);
  const request = parseRequestMatch(raw.match, `${field}.match`);
  const key = orThrow(parseKeySource(raw.key), `${field}.key`);
  const fallbackKey = raw.fallbackKey === undefined ? undefined : orThrow(parseKeySource(raw.fallbackKey), `${field}.fallbackKey`);
  const counting = parseRouteCounting(raw, everyPolicy, field);
  const bodyRead = bodyReadOf(raw.maxRequestReadBytes, [key, fallbackKey], counting, policiesBy, field);
  return {
    field,
    path: raw.match.path,
    pattern: orThrow(parsePathPattern(raw.match.path, raw.match.caseSensitive), `${field}.match.path`),
    methods: methodSet(methods),
    ...(request ? { request } : {}),
    key,
    fallbackKey,
    policies,
    onLimit: raw.onLimit,
    maxDelayMs: raw.maxDelayMs,
    // A config's top-level dryRun (or SPILLWAY_DRY_RUN) puts every route in dry-run.
    dryRun: raw.dryRun || config.dryRun,
    originTimeoutMs: raw.originTimeoutMs ?? originTimeoutMs,
    counting,
    ...(policiesBy ? { policiesBy } : {}),
    ...(bodyRead ? { bodyRead } : {}),
    ...(raw.providerHeaders === undefined ? {} : { providerHeaders: parseProviderHeaders(raw.providerHeaders, policies, `${field}.providerHeaders`) }),
  };
}

/**
 * The body fields a route reads (its `json:` keys, a requestJson estimate, policiesBy) within
 * `maxRequestReadBytes`; undefined: none. A route that reads its body for one of those and
 * prices microdollars reads its `model` too (measures.ts pricedByRequest): a body is never held
 * for the model alone.
 */
function bodyReadOf(limit: unknown, keys: readonly (KeySource | undefined)[], counting: RouteCounting | undefined, policiesBy: PoliciesBy | undefined, field: string): BodyRead | undefined {
  const paths = keys.flatMap(jsonPaths);
  const estimates = counting?.estimates ? [counting.estimates.input, counting.estimates.output] : counting?.estimate ? [counting.estimate] : [];
  for (const estimate of estimates) if (estimate.from === "requestJson") paths.push(...estimate.paths);
  if (policiesBy) paths.push(policiesBy.path);
  const [least, most] = REQUEST_READ_BYTES_RANGE;
  if (limit !== undefined && (typeof limit !== "number" || !Number.isInteger(limit) || limit < least || limit > most)) {
    throw new ValidationError(`${field}.maxRequestReadBytes`, `must be an integer from ${least} to ${most}, got ${describeValue(limit)}`);
  }
  if (paths.length === 0) {
    if (limit !== undefined) throw new ValidationError(`${field}.maxRequestReadBytes`, 'is for a route that reads its request body: a "json:" key, a "requestJson" estimate or "policiesBy"');
    return undefined;
  }
  if (counting?.cost.from === "usage" && counting.cost.prices) paths.push([...REQUEST_MODEL_PATH]);
  const unique = [...new Map(paths.map((path) => [path.join("."), path])).values()];
  return { paths: unique, limitBytes: (limit as number | undefined) ?? DEFAULT_REQUEST_READ_BYTES };
}

function parseRequestMatch(match: { host?: string; headers?: Record<string, string | string[] | true> }, field: string): RequestMatch | undefined {
  if (match.host === undefined && match.headers === undefined) return undefined;
  const request: RequestMatch = {};
  if (match.host !== undefined) request.host = orThrow(parseHostMatch(match.host), `${field}.host`);
  if (match.headers !== undefined) {
    const headers = parseHeaderMatch(match.headers);
    if ("error" in headers) throw new ValidationError(`${field}.headers.${headers.field}`, headers.error);
    request.headers = headers;
  }
  return request;
}

const parseRanges = (items: readonly string[], field: string) => items.map((item, i) => orThrow(parseIpRange(item), `${field}.${i}`));

/**
 * Validates the gateway part of a config: one validator for the Worker (at load, so a bad
 * config fails the deploy) and Node (at start). Returns undefined when the config has no
 * `origin` (Spillway then serves only /v1 and /healthz). Errors name the field:
 * `routes.0.key: must be one of "ip", ... got "ipv6"`.
 *
 * @example const gateway = parseGatewayConfig(parseConfig(JSON.parse(text)));
 */
export function parseGatewayConfig(config: SpillwayConfig): GatewayConfig | undefined {
  const raw = config.gateway;
  if (!raw) return undefined;
  const origin = parseOrigin(raw.origin);
  const routes = (raw.routes ?? []).map((route, index) => parseRoute(route, index, config, raw.originTimeoutMs));
  // A route's fallbackKey is a source of its own (its keys see that source's entries).
  const routeSources = routes.flatMap((route) => (route.fallbackKey ? [route.key, route.fallbackKey] : [route.key]));
  return {
    origin,
    routes,
    trustProxy: parseRanges(raw.trustProxy, "trustProxy"),
    allow: parseAccessList(raw.allow, "allow", routeSources),
    deny: parseAccessList(raw.deny, "deny", routeSources),
    originFeedback: raw.originFeedback,
    originTimeoutMs: raw.originTimeoutMs,
    legacyHeaders: config.legacyHeaders,
  };
}
