import type { SpillwayConfig } from "../config/config.js";
import { rateLimitHeaders } from "../core/headers.js";
import { ValidationError, describeValue } from "../core/validation.js";
import { type HeldLease, type LimitContext, type LimitOutcome, type LimitPlan, type LogFn, defaultLog, limitRequest, quotaExceededResponse } from "../http/limit.js";
import { type CountedOutcome, peekRequest } from "../http/count-limit.js";
import { reserveRequest } from "../http/count-reserve.js";
import { UsageWarnings } from "../http/counting.js";
import { type CanonicalPath, type RefusedPath, isRefused } from "../http/path.js";
import { problem, problemResponse } from "../http/problems.js";
import type { Limiter } from "../core/limiter.js";
import { observeLimiter } from "../observe/observed-limiter.js";
import type { SpillwayObserver } from "../observe/observer.js";
import { DRY_RUN_HEADER } from "../core/wire.js";
import { type GatewayConfig, type GatewayRoute, ORIGIN_PAUSE_POLICY, parseGatewayConfig } from "./config.js";
import { listsKey } from "./access.js";
import { pauseKey, pausePolicy, pausedDecision, pausedForMs, retryAfterMsOf } from "./feedback.js";
import { type IpAddress, anyRangeContains, resolveClientIp } from "./ip.js";
import { type CfProperties, type HeaderLookup, REPEATED, type RequestFacts, type RequestKey, describeKeySource, keyOf, missingPart } from "./keys.js";
import { KeyFacts, hostOf } from "./key-facts.js";
import { matchesRequest } from "./match.js";
import { type Overrides, overridesFor } from "../overrides/overrides.js";
import type { OriginTarget } from "./proxy.js";
import { AnswerCount, carriesDebits, requestCostOf } from "./answer-count.js";
import { measuredRequest, reservationsFor } from "./measured-limit.js";
import { pricedByRequest } from "./measures.js";
import { findRoute } from "./routes.js";
import { type BodyFields, type BodyRead, noBodyFields } from "./body-fields.js";
import { type EstimateSource, bodyEstimate } from "./estimate.js";
import { pickPolicies } from "./policies-by.js";
import type { Policy } from "../core/types.js";

/**
 * What the gateway core needs of a request, whatever the runtime: the I/O edges (Hono's
 * Request on Workers, node:http on Node) build this and do the forwarding themselves.
 */
export interface GatewayFacts {
  method: string;
  /** The canonical path (path.ts); a refused path is the edge's 400, never decided. */
  path: CanonicalPath;
  /** "" or "?…", as URL.search has it. */
  search: string;
  /** The request URL, read only for `query:` keys (building one costs time on Node). */
  url(): URL;
  headers: HeaderLookup;
  /** Who connected, as the runtime knows it (never a client-sent header). */
  socketIp: string | undefined;
  /** Aborted when the client goes away; asked for only when a request may be delayed. */
  signal(): AbortSignal;
  /** Keeps background work (a lease release, an origin pause) alive: a Worker's waitUntil. */
  defer: (promise: Promise<unknown>) => void;
  /** A Worker's `request.cf` (for `cf:` keys); absent on Node. */
  cf?(): CfProperties | undefined;
  /**
   * Reads the body's fields a route needs (body-fields.ts), holding what it read for the origin:
   * the edge forwards it, unchanged, before the rest. Never rejects (an upload that broke off
   * has no fields). Absent where the body is not the gateway's to read (an upgrade, a
   * forward-auth check): such a request's body has no fields.
   */
  readBody?(read: BodyRead): Promise<BodyFields>;
}

/**
 * The 400 for a request that carries its route's key source more than once (keys.ts REPEATED):
 * counted under one value, the origin might serve another (PHP and Rails read a parameter's
 * last value), so it is refused whatever the values, naming the source.
 */
function repeatedKey(source: GatewayRoute["key"], facts: RequestFacts, label: string): GatewayStep {
  const repeated = describeKeySource(missingPart(source, facts));
  const detail = `this route is limited by ${describeKeySource(source)}; the request carries ${repeated} more than once, and a route keys on one value: send it once`;
  return { forward: false, route: label, response: problemResponse(problem(400, detail)) };
}

/** What to do with a request: answer it here, or forward it to the origin. */
export type GatewayStep =
  | { forward: false; response: Response; route?: string }
  | {
      forward: true;
      target: OriginTarget;
      /** Added to the origin's answer: RateLimit fields, dry-run marks. */
      extra: Record<string, string>;
      lease: HeldLease | undefined;
      timeoutMs: number;
      /** The route's label (its index), undefined for unrouted and allowed requests. */
      route?: string;
      /** Set when origin feedback may pause this key (the origin answered 429). */
      key?: RequestKey;
      /** Set on a route that counts answers (`count`, a cost the answer reports): ask it at the answer's head. */
      count?: AnswerCount;
    };

/** What each route needs per request, built once: its label, observed limiter and plan. */
interface PreparedRoute {
  label: string;
  limiter: Limiter;
  plan: LimitPlan;
  /** With policiesBy: each stack's plan, by the stack (policies-by.ts). */
  plans?: ReadonlyMap<readonly Policy[], LimitPlan>;
}

/** The route label of metrics and logs: its index in `routes`. */
const routeLabel = (route: GatewayRoute) => route.field.slice("routes.".length);
export const UNROUTED = "unrouted";

const forbidden = (detail: string) => problemResponse(problem(403, detail, { title: "Forbidden" }));

export interface GatewayCoreOptions {
  config: SpillwayConfig;
  gateway?: GatewayConfig;
  limiter: Limiter;
  log?: LogFn;
  observer?: SpillwayObserver;
  /** Per-key limits, shared with the /v1 API (default: the config's and the store's runtime table, overridesFor). */
  overrides?: Overrides;
  /** Every route in dry-run (SPILLWAY_DRY_RUN on a Worker, read with its env). */
  dryRun?: boolean;
}

/**
 * The runtime-neutral gateway of docs/gateway.md: route match, key, allow/deny lists, the limit plan
 * and its headers, origin feedback. The edges (gateway.ts on Hono, node/http/gateway-edge.ts on
 * node:http) only move bytes.
 */
export class GatewayCore {
  readonly gateway: GatewayConfig;
  readonly limiter: Limiter;
  readonly log: LogFn;
  readonly observer: SpillwayObserver | undefined;
  /** Each route's PreparedRoute, built once. */
  readonly #preparedOf: Map<GatewayRoute, PreparedRoute>;
  /** Unusable usage values (a cost header that is no count), logged once per route and minute. */
  readonly #usageWarnings: UsageWarnings;

  constructor(options: GatewayCoreOptions) {
    const parsed = options.gateway ?? parseGatewayConfig(options.config);
    if (!parsed) throw new ValidationError("origin", "is required for the gateway: the URL requests are forwarded to");
    this.gateway = parsed;
    this.limiter = options.limiter;
    this.log = options.log ?? defaultLog;
    this.observer = options.observer;
    this.#usageWarnings = new UsageWarnings(this.log);
    const { observer, limiter } = options;
    // Default: the config's overrides, and the store's runtime table when it has one.
    const routeOverrides = options.overrides ?? overridesFor(options.config, limiter, options.log);
    this.#preparedOf = new Map(
      parsed.routes.map((route) => {
        const label = routeLabel(route);
        // Each route decides through its own observed limiter, so decisions carry the route.
        const routeLimiter = observer ? observeLimiter(limiter, observer, label) : limiter;
        const overrides = routeOverrides.none ? undefined : routeOverrides;
        const dryRun = route.dryRun || options.dryRun === true;
        const planOf = (policies: Policy[]): LimitPlan => ({ policies, onLimit: route.onLimit, maxDelayMs: route.maxDelayMs, dryRun, legacyHeaders: parsed.legacyHeaders, ...(overrides ? { overrides } : {}), ...(route.providerHeaders ? { providerHeaders: route.providerHeaders } : {}) });
        const by = route.policiesBy;
        const plans = by ? new Map([...by.stacks.values(), by.fallback].map((stack) => [stack, planOf(stack)] as const)) : undefined;
        return [route, { label, limiter: routeLimiter, plan: planOf(route.policies), ...(plans ? { plans } : {}) }];
      }),
    );
  }

  /**
   * Decides one request: the step itself when no store is asked (unrouted, allow and deny
   * lists, a missing key), else a promise of it (one reaction in the usual case: a proxy's hot
   * path pays for every await). Throws, or rejects with, what limiting throws (a store
   * failure, failMode closed).
   */
  decide(facts: GatewayFacts): GatewayStep | Promise<GatewayStep> {
    const gateway = this.gateway;
    const { path } = facts;
    const target: OriginTarget = { pathname: path.path, search: facts.search };
    // Without a trusted proxy X-Forwarded-For is never believed, so it is not even looked up.
    const forwardedFor = gateway.trustProxy.length > 0 ? facts.headers.get("x-forwarded-for") : null;
    const clientIp = resolveClientIp(facts.socketIp, forwardedFor, gateway.trustProxy);
    if (clientIp && anyRangeContains(gateway.deny.ips, clientIp)) return { forward: false, response: forbidden("the client address is on the deny list") };
    if (clientIp && anyRangeContains(gateway.allow.ips, clientIp)) return { forward: true, target, extra: {}, lease: undefined, timeoutMs: gateway.originTimeoutMs };
    const route = findRoute(gateway.routes, facts.method, path, (candidate) => !candidate.request || matchesRequest(candidate.request, () => hostOf(facts), facts.headers));
    if (!route) return { forward: true, target, extra: {}, lease: undefined, timeoutMs: gateway.originTimeoutMs };
    // A route that reads body fields waits for them (a bounded prefix, held for the origin: body-fields.ts).
    if (route.bodyRead) {
      if (!facts.readBody) return this.#decideRouted(facts, route, target, clientIp, noBodyFields("the request's body is not read here"));
      return facts.readBody(route.bodyRead).then((body) => this.#decideRouted(facts, route, target, clientIp, body));
    }
    return this.#decideRouted(facts, route, target, clientIp, undefined);
  }

  #decideRouted(facts: GatewayFacts, route: GatewayRoute, target: OriginTarget, clientIp: IpAddress | undefined, body: BodyFields | undefined): GatewayStep | Promise<GatewayStep> {
    const keyFacts = new KeyFacts(clientIp, facts, route.pattern, body);
    // keyOf is a promise only for a long (hashed) key, which is never missing: no fallback then.
    let found = keyOf(route.key, keyFacts);
    if (found === undefined && route.fallbackKey) {
      found = keyOf(route.fallbackKey, keyFacts);
      if (found === REPEATED) return repeatedKey(route.fallbackKey, keyFacts, this.#preparedOf.get(route)!.label);
    }
    if (found === REPEATED) return repeatedKey(route.key, keyFacts, this.#preparedOf.get(route)!.label);
    if (found instanceof Promise) return found.then((key) => this.#decideKeyed(facts, route, target, key, keyFacts));
    return this.#decideKeyed(facts, route, target, found, keyFacts);
  }

  #decideKeyed(facts: GatewayFacts, route: GatewayRoute, target: OriginTarget, key: RequestKey | undefined, keyFacts: RequestFacts): GatewayStep | Promise<GatewayStep> {
    const gateway = this.gateway;
    const prepared = this.#preparedOf.get(route)!;
    const { label } = prepared;
    if (!key) {
      const missing = describeKeySource(missingPart(route.key, keyFacts));
      // A body without fields says why (too long for maxRequestReadBytes, not JSON): the client can mend it.
      const why = keyFacts.body?.reason === undefined ? "" : ` (${keyFacts.body.reason})`;
      return { forward: false, route: label, response: problemResponse(problem(400, `this route is limited by ${describeKeySource(route.key)}; the request does not carry ${missing}${why}`)) };
    }
    // Lists match a value with the source that read it (access.ts): `x-user: vip` is not the API key `vip`.
    if (listsKey(gateway.deny.keys, key)) return { forward: false, route: label, response: forbidden("the key is on the deny list") };
    if (listsKey(gateway.allow.keys, key)) return { forward: true, target, extra: {}, lease: undefined, timeoutMs: route.originTimeoutMs, route: label };
    let plan = prepared.plan;
    if (route.policiesBy) {
      const picked = pickPolicies(route.policiesBy, keyFacts.body);
      if ("refused" in picked) return { forward: false, route: label, response: problemResponse(problem(400, `this route is limited by a request field: ${picked.refused}`)) };
      plan = prepared.plans!.get(picked.policies)!;
    }
    if (gateway.originFeedback) return pausedForMs(this.limiter, key.storeKey).then((pausedMs) => this.#limit(facts, route, prepared, plan, target, key, pausedMs, keyFacts.body));
    return this.#limit(facts, route, prepared, plan, target, key, 0, keyFacts.body);
  }

  /** The route's limit for the key, by `plan` (the route's, or the stack policiesBy picked); `pausedMs` > 0 while origin feedback pauses it. */
  #limit(facts: GatewayFacts, route: GatewayRoute, prepared: PreparedRoute, plan: LimitPlan, target: OriginTarget, key: RequestKey, pausedMs: number, body: BodyFields | undefined): GatewayStep | Promise<GatewayStep> {
    const gateway = this.gateway;
    const { label, limiter } = prepared;
    let pausedInDryRun = false;
    if (pausedMs > 0) {
      const decision = pausedDecision(pausedMs);
      if (!plan.dryRun) {
        const headers = rateLimitHeaders(decision, [pausePolicy(pausedMs)], { legacy: gateway.legacyHeaders });
        // A route with a provider's fields: its every 429 carries retry-after-ms.
        if (plan.providerHeaders) headers["retry-after-ms"] = String(Math.max(1, pausedMs));
        return { forward: false, route: label, response: quotaExceededResponse(decision, headers) };
      }
      pausedInDryRun = true;
      this.log({ event: "dry-run-deny", route: route.field, key: key.storeKey, policies: [ORIGIN_PAUSE_POLICY], retryAfterMs: pausedMs });
    }
    const signal = route.onLimit === "delay" ? facts.signal() : undefined;
    const context = { signal, label: route.field, log: this.log, defer: facts.defer, overrideKey: key.value, overrideSource: key.source };
    const counting = route.counting;
    if (!counting) return limitRequest(limiter, key.storeKey, plan, context).then((outcome) => this.#step(route, label, target, key, outcome, pausedInDryRun, undefined));
    const cost = requestCostOf(counting.cost, facts.headers, route.field, this.#usageWarnings);
    // A cost known before forwarding, nothing counted after: checked as every request is, at that cost.
    if (!counting.afterAnswer) return limitRequest(limiter, key.storeKey, plan, { ...context, cost }).then((outcome) => this.#step(route, label, target, key, outcome, pausedInDryRun, undefined));
    if (counting.cost.from === "usage") return this.#measured(facts, route, prepared, plan, target, key, pausedInDryRun, context, body);
    // With an estimate: reserve it now (a real check), settle the difference on the answer.
    const estimate = counting.estimate ? this.#estimateOf(counting.estimate, facts, body, `${route.field}.estimate`) : undefined;
    const counted = estimate === undefined ? peekRequest(limiter, key.storeKey, plan, context) : reserveRequest(limiter, key.storeKey, plan, context, estimate);
    return counted.then((outcome) => {
      const count = outcome.admitted ? new AnswerCount({ counting, field: route.field, warnings: this.#usageWarnings, settle: outcome.settle, before: outcome.headers, requestCost: cost, carries: carriesDebits(limiter) }) : undefined;
      return this.#step(route, label, target, key, outcome, pausedInDryRun, count);
    });
  }

  /** What a request is reserved at (estimate.ts): a constant, a request header, or the body's fields. */
  #estimateOf(source: EstimateSource, facts: GatewayFacts, body: BodyFields | undefined, field: string): number {
    if (source.from !== "requestJson") return requestCostOf(source, facts.headers, field, this.#usageWarnings)!;
    const estimated = bodyEstimate(source, body ?? noBodyFields("the request's body is not read here"));
    if (estimated.unusable !== undefined) this.#usageWarnings.warn(field, { route: field, value: describeValue(estimated.unusable), cost: estimated.cost });
    return estimated.cost;
  }

  /**
   * A "usage" cost (measures.ts): each policy charged its measure, decided by groups
   * (measured-limit.ts) under `plan` (the route's, or the stack policiesBy picked); the estimate, if any, read as the plain route's is (a header, or the body's fields).
   */
  #measured(facts: GatewayFacts, route: GatewayRoute, prepared: PreparedRoute, plan: LimitPlan, target: OriginTarget, key: RequestKey, pausedInDryRun: boolean, context: LimitContext, body: BodyFields | undefined): Promise<GatewayStep> {
    const counting = route.counting!;
    const cost = counting.cost;
    if (cost.from !== "usage") throw new TypeError("a usage cost");
    // The body's model, when the route reads the body, prices the reservation and an answer that names none.
    const priced = pricedByRequest(cost, body);
    const reservations = reservationsFor(counting, priced, (source, field) => this.#estimateOf(source, facts, body, field), route.field);
    return measuredRequest(prepared.limiter, key.storeKey, plan, context, priced, reservations).then((outcome) => {
      if (!outcome.admitted) return this.#step(route, prepared.label, target, key, outcome, pausedInDryRun, undefined);
      const count = new AnswerCount({ counting: priced === cost ? counting : { ...counting, cost: priced }, field: route.field, warnings: this.#usageWarnings, settle: () => outcome.headers, before: outcome.headers, requestCost: undefined, charge: outcome.settle });
      return this.#step(route, prepared.label, target, key, { admitted: true, headers: outcome.headers, ...(outcome.lease ? { lease: outcome.lease } : {}) }, pausedInDryRun, count);
    });
  }

  /** The step for a limited request, once its outcome is known. */
  #step(route: GatewayRoute, label: string, target: OriginTarget, key: RequestKey, outcome: LimitOutcome | CountedOutcome, pausedInDryRun: boolean, count: AnswerCount | undefined): GatewayStep {
    if (!outcome.admitted) return { forward: false, route: label, response: outcome.response };
    if (pausedInDryRun) outcome.headers[DRY_RUN_HEADER] = "denied";
    const step: GatewayStep = { forward: true, target, extra: outcome.headers, lease: outcome.lease, timeoutMs: route.originTimeoutMs, route: label, key: this.gateway.originFeedback ? key : undefined };
    if (count) step.count = count;
    return step;
  }

  /** Origin feedback: a 429 with Retry-After from the origin pauses the key (docs/gateway.md). */
  originAnswered(step: GatewayStep & { forward: true }, status: number, retryAfter: () => string | null, defer: (promise: Promise<unknown>) => void): void {
    if (!step.key || status !== 429) return;
    const pauseMs = retryAfterMsOf(retryAfter(), Date.now());
    if (pauseMs !== undefined) defer(pauseKey(this.limiter, step.key.storeKey, pauseMs));
  }
}

/**
 * What every edge refuses before deciding: a message framed two ways (request smuggling;
 * Node's parser already refuses it) and a path with no safe canonical form (path.ts). Called
 * only when one of the two holds: the 400 for it.
 */
export function refusal(framedTwice: boolean, path: CanonicalPath | RefusedPath): Response {
  if (framedTwice || !isRefused(path)) return problemResponse(problem(400, "the request has both Transfer-Encoding and Content-Length"));
  return problemResponse(problem(400, `the request path has no safe canonical form: ${path.refused}`));
}
