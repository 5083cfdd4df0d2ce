import { type Context, Hono } from "hono";
import type { SpillwayConfig } from "../config.js";
import { rateLimitHeaders } from "../core/headers.js";
import { ValidationError } from "../core/validation.js";
import { onError, problem, problemResponse } from "../http/problems.js";
import type { Limiter } from "../limiter.js";
import { observeLimiter } from "../observe/observed-limiter.js";
import type { SpillwayObserver } from "../observe/observer.js";
import { type GatewayConfig, type GatewayRoute, ORIGIN_PAUSE_POLICY, parseGatewayConfig } from "./config.js";
import { pauseKey, pausePolicy, pausedDecision, pausedForMs, retryAfterMsOf } from "./feedback.js";
import { anyRangeContains, resolveClientIp } from "./ip.js";
import { type RequestKey, describeKeySource, keyOf } from "./keys.js";
import { DRY_RUN_HEADER, type HeldLease, type LimitPlan, type LogFn, defaultLog, deferOf, limitRequest, onBodyDone, quotaExceededResponse } from "../http/limit.js";
import { OriginTimeoutError, OriginWait, gatewayTimeout } from "./origin-timeout.js";
import { type FetchOrigin, type OriginAnswer, type OriginTarget, badGateway, clientResponse, globalFetchOrigin, originHeader, originRequest, originUrlFor } from "./proxy.js";
import { canonicalPath, isRefused, rawPathOf } from "../http/path.js";
import { findRoute, keyPathOf } from "./routes.js";

export interface GatewayOptions {
  /** The validated config (policies, legacyHeaders, and the raw gateway fields). */
  config: SpillwayConfig;
  /** The gateway part, when already validated (default: parsed from `config`). */
  gateway?: GatewayConfig;
  limiter: Limiter;
  /**
   * Who connected to us, as the runtime knows it: CF-Connecting-IP on Workers, the socket
   * address on Node. Never a client-sent header: X-Forwarded-For is read only through `trustProxy`.
   */
  clientIpOf: (c: Context) => string | undefined;
  /** How requests reach the origin (default: global fetch). */
  fetchOrigin?: FetchOrigin;
  log?: LogFn;
  /** Told each route's decisions, answers (route, status) and origin times. */
  observer?: SpillwayObserver;
}

/** The route label of metrics and logs: its index in `routes`. */
const routeLabel = (route: GatewayRoute) => route.field.slice("routes.".length);
const UNROUTED = "unrouted";

const forbidden = (detail: string) => problemResponse(problem(403, detail, { title: "Forbidden" }));

/**
 * The gateway of SPEC §5 as a Hono app, mounted by createApp as its `fallback`: every
 * request that is not /v1 or /healthz is matched against the routes, limited by its key,
 * and streamed to the origin and back. Requests no route matches pass through unlimited.
 *
 * @example
 * const fallback = createGateway({ config, limiter, clientIpOf: (c) => c.req.header("cf-connecting-ip") });
 * export default createApp({ service, tokenOf, fallback });
 */
export function createGateway(options: GatewayOptions): Hono {
  const parsed = options.gateway ?? parseGatewayConfig(options.config);
  if (!parsed) throw new ValidationError("origin", "is required for the gateway: the URL requests are forwarded to");
  const gateway: GatewayConfig = parsed;
  const { limiter, clientIpOf } = options;
  const fetchOrigin = options.fetchOrigin ?? globalFetchOrigin;
  const log = options.log ?? defaultLog;
  const observer = options.observer;
  // Each route decides through its own observed limiter, so decisions carry the route.
  const limiterOf = new Map<GatewayRoute, Limiter>(gateway.routes.map((route) => [route, observer ? observeLimiter(limiter, observer, routeLabel(route)) : limiter]));
  // Built once per route rather than per request.
  const planOf = new Map<GatewayRoute, LimitPlan>(
    gateway.routes.map((route) => [route, { policies: route.policies, onLimit: route.onLimit, maxDelayMs: route.maxDelayMs, dryRun: route.dryRun, legacyHeaders: gateway.legacyHeaders }]),
  );

  async function forward(
    request: Request,
    target: OriginTarget,
    extra: Record<string, string>,
    lease: HeldLease | undefined,
    timeoutMs: number,
    key?: RequestKey,
    defer?: (p: Promise<unknown>) => void,
  ): Promise<Response> {
    let origin: OriginAnswer;
    try {
      const wait = new OriginWait(request.signal, timeoutMs);
      origin = await wait.answer(fetchOrigin(originRequest(request, originUrlFor(gateway.origin, target), wait)));
    } catch (error) {
      await lease?.release();
      // A client that went away reads no answer; do not report its abort as an origin fault.
      if (request.signal.aborted) return new Response(null, { status: 499 });
      if (error instanceof OriginTimeoutError) return gatewayTimeout(gateway.origin, error.timeoutMs);
      return badGateway(gateway.origin, error);
    }
    if (gateway.originFeedback && key && origin.status === 429) {
      const pauseMs = retryAfterMsOf(originHeader(origin, "retry-after"), Date.now());
      if (pauseMs !== undefined) defer?.(pauseKey(limiter, key.storeKey, pauseMs));
    }
    if (!lease) return clientResponse(origin, extra);
    if (!origin.body) {
      await lease.release();
      return clientResponse(origin, extra);
    }
    return clientResponse(origin, extra, onBodyDone(origin.body, () => void lease.release()));
  }

  async function limited(c: Context, route: GatewayRoute, key: RequestKey, target: OriginTarget): Promise<Response> {
    const request = c.req.raw;
    const defer = deferOf(c);
    let pausedInDryRun = false;
    if (gateway.originFeedback) {
      const pausedMs = await pausedForMs(limiter, key.storeKey);
      if (pausedMs > 0) {
        const decision = pausedDecision(pausedMs);
        if (!route.dryRun) return quotaExceededResponse(decision, rateLimitHeaders(decision, [pausePolicy(pausedMs)], { legacy: gateway.legacyHeaders }));
        pausedInDryRun = true;
        log({ event: "dry-run-deny", route: route.field, key: key.storeKey, policies: [ORIGIN_PAUSE_POLICY], retryAfterMs: pausedMs });
      }
    }
    const outcome = await limitRequest(limiterOf.get(route)!, key.storeKey, planOf.get(route)!, { signal: request.signal, label: route.field, log, defer });
    if (!outcome.admitted) return outcome.response;
    if (pausedInDryRun) outcome.headers[DRY_RUN_HEADER] = "denied";
    if (!observer?.originDuration) return forward(request, target, outcome.headers, outcome.lease, route.originTimeoutMs, key, defer);
    const startedMs = performance.now();
    const response = await forward(request, target, outcome.headers, outcome.lease, route.originTimeoutMs, key, defer);
    observer.originDuration({ route: routeLabel(route), durationMs: performance.now() - startedMs });
    return response;
  }

  async function handle(c: Context, matched: { route?: string }): Promise<Response> {
    const request = c.req.raw;
    // Request smuggling: a message framed two ways is refused (Node's parser already does so).
    if (request.headers.has("transfer-encoding") && request.headers.has("content-length")) {
      return problemResponse(problem(400, "the request has both Transfer-Encoding and Content-Length"));
    }
    // The path policy (path.ts): routes match, keys see and the origin gets one canonical path.
    const path = canonicalPath(rawPathOf(request.url));
    if (isRefused(path)) return problemResponse(problem(400, `the request path has no safe canonical form: ${path.refused}`));
    const url = new URL(request.url);
    const target: OriginTarget = { pathname: path.path, search: url.search };
    // Without a trusted proxy X-Forwarded-For is never believed, so it is not even looked up.
    const forwardedFor = gateway.trustProxy.length > 0 ? request.headers.get("x-forwarded-for") : null;
    const clientIp = resolveClientIp(clientIpOf(c), forwardedFor, gateway.trustProxy);
    if (clientIp && anyRangeContains(gateway.deny.ips, clientIp)) return forbidden("the client address is on the deny list");
    if (clientIp && anyRangeContains(gateway.allow.ips, clientIp)) return forward(request, target, {}, undefined, gateway.originTimeoutMs);
    const route = findRoute(gateway.routes, request.method, path);
    if (!route) return forward(request, target, {}, undefined, gateway.originTimeoutMs);
    matched.route = routeLabel(route);

    const facts = { clientIp, headers: request.headers, url, path: keyPathOf(route.pattern, path) };
    // keyOf is a promise only for a long (hashed) key, which is never missing: no fallback then.
    let found = keyOf(route.key, facts);
    if (found === undefined && route.fallbackKey) found = keyOf(route.fallbackKey, facts);
    const key = found instanceof Promise ? await found : found;
    if (!key) return problemResponse(problem(400, `this route is limited by ${describeKeySource(route.key)}, which the request does not carry`));
    if (gateway.deny.keys.has(key.value)) return forbidden("the key is on the deny list");
    if (gateway.allow.keys.has(key.value)) return forward(request, target, {}, undefined, route.originTimeoutMs);
    return limited(c, route, key, target);
  }

  const app = new Hono();
  // Errors become problems here rather than through app.onError: Hono wraps every route of a
  // sub-app that has its own error handler in a per-request compose when it is mounted.
  const answer = (c: Context, matched: { route?: string }) =>
    handle(c, matched).catch((error: unknown) => {
      if (error instanceof Error) return onError(error, c);
      throw error;
    });
  const gatewayRequest = observer?.gatewayRequest;
  if (!gatewayRequest) app.all("*", (c) => answer(c, {}));
  else
    app.all("*", async (c) => {
      const matched: { route?: string } = {};
      const response = await answer(c, matched);
      gatewayRequest({ route: matched.route ?? UNROUTED, status: response.status });
      return response;
    });
  return app;
}
