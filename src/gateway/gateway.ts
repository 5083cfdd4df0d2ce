import { type Context, Hono } from "hono";
import type { SpillwayConfig } from "../config/config.js";
import { deferOf, type LogFn, onBodyDone } from "../http/limit.js";
import { canonicalPath, isRefused, rawPathOf } from "../http/path.js";
import { onError } from "../http/problems.js";
import type { Limiter } from "../core/limiter.js";
import type { SpillwayObserver } from "../observe/observer.js";
import type { GatewayConfig } from "./config.js";
import type { CfProperties, HeaderLookup } from "./keys.js";
import type { Overrides } from "../overrides/overrides.js";
import { type GatewayFacts, GatewayCore, type GatewayStep, UNROUTED, refusal } from "./core.js";
import { OriginTimeoutError, OriginWait, gatewayTimeout } from "./origin-timeout.js";
import { type FetchOrigin, type OriginAnswer, badGateway, clientResponse, globalFetchOrigin, originHeader, originRequest, originUrlFor } from "./proxy.js";
import { isUnrelayableStatus, isWebSocketUpgrade, unrelayableStatus } from "./upgrade.js";
import { canRelayWebSockets, switchWebSocket } from "./websocket-relay.js";
import { ClientLeaving, tappedBody } from "./read-on.js";
import { mountForwardAuth } from "./forward-auth-hono.js";
import { holdBody } from "./body-hold.js";
import { noBodyFields } from "./body-fields.js";
import type { SpillwayTracer } from "../observe/trace.js";
import { annotateStep } from "./trace.js";

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
  /**
   * Whether a request field came on more than one line, where the runtime can tell (Node's
   * rawHeaders; a Worker's runtime joins the lines first): a `header:` key refuses such a request.
   * @default none: a field is the one value Headers joins
   */
  fieldRepeated?: (c: Context, lowerName: string) => boolean;
  /** How requests reach the origin (default: global fetch). */
  fetchOrigin?: FetchOrigin;
  log?: LogFn;
  /** Told each route's decisions, answers (route, status) and origin times. */
  observer?: SpillwayObserver;
  /** Per-key limits (config `overrides` and the store's runtime table), shared with the /v1 API. */
  overrides?: Overrides;
  /** Every route in dry-run (SPILLWAY_DRY_RUN). */
  dryRun?: boolean;
  /**
   * The longest a counted answer is read on once its client has gone, whatever a route's
   * maxReadMs says: the platform's own bound (a Worker's waitUntil runs 30 s past the client).
   * @default no bound beyond the route's
   */
  readOnCapMs?: number;
  /** Traces (src/observe/trace.ts): the decision is written on the request span active when it is made (a Worker's). */
  tracer?: SpillwayTracer;
}

/**
 * The gateway of docs/gateway.md as a Hono app, mounted by createApp as its `fallback`: every
 * request that is not /v1 or /healthz is matched against the routes, limited by its key,
 * and streamed to the origin and back. Requests no route matches pass through unlimited.
 * The deciding is GatewayCore's (core.ts); this is the Request/Response edge the Worker
 * serves (on Node, node/http/gateway-edge.ts serves the same core on node:http).
 *
 * @example
 * const fallback = createGateway({ config, limiter, clientIpOf: (c) => c.req.header("cf-connecting-ip") });
 * export default createApp({ service, tokenOf, fallback });
 */
export function createGateway(options: GatewayOptions): Hono {
  return createGatewayApp(new GatewayCore(options), options);
}

/** The Hono edge over an existing core (the Node gateway serves its slow path with it). */
export function createGatewayApp(core: GatewayCore, options: Pick<GatewayOptions, "clientIpOf" | "fieldRepeated" | "fetchOrigin" | "readOnCapMs" | "tracer">): Hono {
  const { gateway, observer } = core;
  const { clientIpOf, fieldRepeated } = options;
  const readOnMs = (routeMs: number) => Math.min(routeMs, options.readOnCapMs ?? routeMs);
  const fetchOrigin = options.fetchOrigin ?? globalFetchOrigin;
  const tracer = options.tracer;

  async function forward(request: Request, step: GatewayStep & { forward: true }, defer: (p: Promise<unknown>) => void, heldBody: ReadableStream<Uint8Array> | undefined): Promise<Response> {
    const { lease, extra } = step;
    // A WebSocket upgrade where this runtime can relay one (workerd); elsewhere a plain request.
    const upgrade = canRelayWebSockets() && isWebSocketUpgrade(request.method, request.headers);
    // A counted answer is charged whatever the client does: its leaving reaches the origin late (read-on.ts).
    const leaving = step.count ? new ClientLeaving(request.signal, readOnMs(step.count.limits.ms)) : undefined;
    let origin: OriginAnswer;
    try {
      const wait = new OriginWait(leaving?.signal ?? request.signal, step.timeoutMs);
      origin = await wait.answer(fetchOrigin(originRequest(request, originUrlFor(gateway.origin, step.target), wait, upgrade, heldBody)));
      leaving?.headCame();
    } catch (error) {
      await lease?.release();
      if (leaving?.expired) step.count!.abandoned(defer);
      // A client that went away reads no answer; do not report its abort as an origin fault.
      if (request.signal.aborted) return new Response(null, { status: 499 });
      if (error instanceof OriginTimeoutError) return gatewayTimeout(gateway.origin, error.timeoutMs);
      return badGateway(gateway.origin, error);
    }
    core.originAnswered(step, origin.status, () => originHeader(origin.headers, "retry-after"), defer);
    if (origin.status === 101 && upgrade && origin.webSocket) return switchWebSocket(origin, origin.webSocket, extra, lease, defer);
    if (isUnrelayableStatus(origin.status)) {
      void origin.body?.cancel().catch(() => {});
      await lease?.release();
      return unrelayableStatus(gateway.origin, origin.status);
    }
    if (step.count) return counted(origin, step, defer);
    if (!lease) return clientResponse(origin, extra);
    if (!origin.body) {
      await lease.release();
      return clientResponse(origin, extra);
    }
    return clientResponse(origin, extra, onBodyDone(origin.body, () => void lease.release()));
  }

  /**
   * A counted route's answer (answer-count.ts): its head waits for a debit it can know now; a
   * cost in the body is read by a tap the chunks pass through, and debited (waitUntil) at its
   * end, or, when the client has gone, once the tap has read on (read-on.ts).
   */
  async function counted(origin: OriginAnswer, step: GatewayStep & { forward: true }, defer: (p: Promise<unknown>) => void): Promise<Response> {
    const { lease } = step;
    const answer = step.count!.answered(origin.status, (name) => originHeader(origin.headers, name), defer, origin.encodedBody ? "raw-undecodable" : "decoded");
    const extra = answer.extra instanceof Promise ? await answer.extra : answer.extra;
    const tap = answer.tap;
    let body = origin.body;
    if (tap && body) {
      const tapped = tappedBody(body, tap, readOnMs(tap.limits.ms));
      body = tapped.body;
      // Kept alive (waitUntil) until the tap has debited, even after the client has gone; a
      // lease is held as long, since the origin works on for it.
      defer(lease ? tapped.ended.then(() => lease.release()) : tapped.ended);
      return clientResponse(origin, extra, body);
    }
    tap?.end();
    if (lease && body) body = onBodyDone(body, () => void lease.release());
    else if (lease) await lease.release();
    return clientResponse(origin, extra, body);
  }

  /** A counted request's exchange runs under defer (waitUntil) to its end, even when its client leaves before the head. */
  function forwardKeptAlive(request: Request, step: GatewayStep & { forward: true }, defer: (p: Promise<unknown>) => void, heldBody: ReadableStream<Uint8Array> | undefined): Promise<Response> {
    const answer = forward(request, step, defer, heldBody);
    if (step.count) defer(answer);
    return answer;
  }

  async function handle(c: Context, matched: { route?: string }): Promise<Response> {
    const request = c.req.raw;
    const path = canonicalPath(rawPathOf(request.url));
    // Request smuggling: a message framed two ways is refused (Node's parser already does so).
    const framedTwice = request.headers.has("transfer-encoding") && request.headers.has("content-length");
    if (framedTwice || isRefused(path)) return refusal(framedTwice, path);
    const url = new URL(request.url);
    const defer = deferOf(c);
    const headers: HeaderLookup = fieldRepeated ? { get: (name) => request.headers.get(name), repeated: (name) => fieldRepeated(c, name) } : request.headers;
    const facts: GatewayFacts = { method: request.method, path, search: url.search, url: () => url, headers, socketIp: clientIpOf(c), signal: () => request.signal, defer, cf: () => (request as { cf?: CfProperties }).cf };
    // A route that reads body fields holds the body's prefix (body-hold.ts): the origin gets it first.
    let heldBody: ReadableStream<Uint8Array> | undefined;
    facts.readBody = (read) => {
      if (request.method === "GET" || request.method === "HEAD" || request.body === null) return Promise.resolve(noBodyFields("the request has no body"));
      return holdBody(request.body, read, request.headers.get("content-encoding")).then((held) => {
        heldBody = held.body;
        return held.fields;
      });
    };
    const step = await core.decide(facts);
    matched.route = step.route;
    const span = tracer?.active();
    if (span) annotateStep(span, core, step);
    if (!step.forward) {
      void heldBody?.cancel().catch(() => {});
      return step.response;
    }
    if (!step.route || !observer?.originDuration) return forwardKeptAlive(request, step, defer, heldBody);
    const startedMs = performance.now();
    const response = await forwardKeptAlive(request, step, defer, heldBody);
    observer.originDuration({ route: step.route, durationMs: performance.now() - startedMs });
    return response;
  }

  const app = new Hono();
  mountForwardAuth(app, core, clientIpOf, fieldRepeated);
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
