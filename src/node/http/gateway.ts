// node/http: the node:http edges: the gateway (with its WebSocket upgrade and relay), the /v1
// edge, spillway/node's Express and node:http middleware, origin agents, header and field helpers.
import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { Readable, pipeline } from "node:stream";
import type { Context, Hono } from "hono";
import type { SpillwayConfig } from "../../config/config.js";
import type { Limiter } from "../../core/limiter.js";
import { type GatewayConfig, parseGatewayConfig } from "../../gateway/config.js";
import { GatewayCore } from "../../gateway/core.js";
import { cfParts } from "../../gateway/keys.js";
import { rawFieldRepeated } from "./raw-fields.js";
import { ValidationError } from "../../core/validation.js";
import { type Overrides, overridesFor } from "../../overrides/overrides.js";
import { createGatewayApp } from "../../gateway/gateway.js";
import { NodeGatewayEdge, switchedUnasked } from "./gateway-edge.js";
import { originFields } from "./message-fields.js";
import { type OriginAgents, RETRIABLE_METHODS, lostIdleRace, originAgents } from "./origin-agents.js";
import { NodeUpgradeEdge } from "./upgrade-edge.js";
import { NodeForwardAuthEdge } from "./forward-auth-edge.js";
import { UnrelayableStatusError, isUnrelayableStatus } from "../../gateway/upgrade.js";
import type { LogFn } from "../../http/limit.js";
import type { SpillwayObserver } from "../../observe/observer.js";
import { OriginTimeoutError } from "../../gateway/origin-timeout.js";
import { type FetchOrigin, NULL_BODY_STATUSES, type OriginAnswer, type OriginRequest } from "../../gateway/proxy.js";

/**
 * The client address on Node: the socket's peer, as @hono/node-server passes it in
 * `c.env.incoming`. Client-sent headers (X-Forwarded-For, X-Real-IP, True-Client-IP,
 * CF-Connecting-IP) are never read here.
 */
export function nodeClientIp(c: Context): string | undefined {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

/** Whether a field came on more than one line, read from @hono/node-server's `c.env.incoming` (a header key refuses that). */
export function nodeFieldRepeated(c: Context, lowerName: string): boolean {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  const raw = env?.incoming?.rawHeaders;
  return raw !== undefined && rawFieldRepeated(raw, lowerName);
}

/**
 * An origin client on node:http. Node's global fetch (undici) decompresses gzip/br answers
 * but keeps their Content-Encoding, which a proxy would then mislabel; it is also slower.
 * This client passes bytes through untouched, streams both ways, and keeps connections alive.
 *
 * @example createGateway({ config, limiter, clientIpOf: nodeClientIp, fetchOrigin: createNodeOriginFetch() })
 */
export function createNodeOriginFetch(options: { maxSockets?: number; agents?: OriginAgents } = {}): FetchOrigin {
  const agents = options.agents ?? originAgents({ maxSockets: options.maxSockets });
  return (request) =>
    new Promise<OriginAnswer>((resolve, reject) => {
      const url = new URL(request.url);
      const secure = url.protocol === "https:";
      const pool = agents[secure ? "https:" : "http:"];
      // A request without a body that lost the race with the origin closing an idle pooled
      // connection goes again, once, on a new connection (lostIdleRace).
      const retriable = request.body === null && RETRIABLE_METHODS.has(request.method);
      const ask = (agent: http.Agent | false) => {
        const outgoing = (secure ? https : http).request(url, { method: request.method, headers: request.headerFields, agent, signal: request.signal });
        let failed = false;
        outgoing.on("error", (error) => {
          if (failed) return;
          failed = true;
          if (agent && retriable && !request.signal.aborted && lostIdleRace(outgoing, error)) ask(false);
          else reject(error);
        });
        send(outgoing, request, resolve, reject);
      };
      ask(pool);
    });
}

/** Sends one origin request, streaming the body if any, and settles with its answer. */
function send(outgoing: http.ClientRequest, request: OriginRequest, resolve: (answer: OriginAnswer) => void, reject: (error: unknown) => void): void {
  outgoing.on("upgrade", switchedUnasked);
  outgoing.on("response", (incoming) => {
    // The body's idle timeout (originTimeoutMs) is the socket's: no timer per chunk. The
    // agent resets a socket's timeout when it goes back to the pool.
    incoming.setTimeout(request.timeoutMs, () => incoming.destroy(new OriginTimeoutError(request.timeoutMs)));
    try {
      resolve(toAnswer(incoming, request.method));
    } catch (error) {
      incoming.destroy();
      reject(error);
    }
  });
  if (request.body) {
    // Backpressure flows from the origin socket to the client's upload: nothing is buffered.
    pipeline(Readable.fromWeb(request.body as import("node:stream/web").ReadableStream<Uint8Array>), outgoing, (error) => {
      if (error) outgoing.destroy(error);
    });
  } else {
    outgoing.end();
  }
}

function toAnswer(incoming: IncomingMessage, method: string): OriginAnswer {
  const status = incoming.statusCode ?? 0;
  // 101 only follows an Upgrade, which the gateway strips; anything else is a broken origin.
  if (isUnrelayableStatus(status)) throw new UnrelayableStatusError(status);
  const statusText = incoming.statusMessage ?? "";
  const headers = originFields(incoming.rawHeaders);
  if (method === "HEAD" || NULL_BODY_STATUSES.has(status)) {
    incoming.resume();
    return { status, statusText, headers, body: null };
  }
  return { status, statusText, headers, body: Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>, encodedBody: true };
}

export interface NodeGatewayOptions {
  config: SpillwayConfig;
  /** The gateway part, when already validated (e.g. before connecting to Redis). */
  gateway?: GatewayConfig;
  limiter: Limiter;
  fetchOrigin?: FetchOrigin;
  log?: LogFn;
  /** Told each route's decisions, answers and origin times (see createGateway). */
  observer?: SpillwayObserver;
  /** Per-key limits, shared with the /v1 API (default: the config's and the store's table, see overridesFor). */
  overrides?: Overrides;
  /** The connection pools to the origin; pass one set to every gateway a reload builds (default: new ones). */
  agents?: OriginAgents;
}

/**
 * The gateway of `spillway serve`: one GatewayCore served by two edges. `edge` (node:http in
 * and out) takes what startServer finds to be plain gateway traffic; `app` (the Hono edge
 * over the same core) takes the rest: request targets @hono/node-server rewrites (dot
 * segments, percent-encoding, absolute form), so that every spelling is decided as before.
 * With a custom `fetchOrigin` there is no `edge`: the Hono edge then serves everything.
 */
export class NodeGateway {
  readonly app: Hono;
  readonly edge: NodeGatewayEdge | undefined;
  /** WebSocket upgrades (upgrade-edge.ts); with a custom `fetchOrigin`, none: upgrades are then plain requests. */
  readonly upgrades: NodeUpgradeEdge | undefined;
  /** `/v1/forward-auth`: the same core's decision for a proxy's check request (docs/proxies.md). */
  readonly forwardAuth: NodeForwardAuthEdge;
  constructor(app: Hono, edge: NodeGatewayEdge | undefined, upgrades: NodeUpgradeEdge | undefined, forwardAuth: NodeForwardAuthEdge) {
    this.app = app;
    this.edge = edge;
    this.upgrades = upgrades;
    this.forwardAuth = forwardAuth;
  }
}

/** `cf:` keys read a Worker's request.cf, which Node does not have: a config error here, not a 400 per request. */
export function refuseCfKeys(gateway: GatewayConfig): void {
  for (const route of gateway.routes) {
    for (const [name, source] of [["key", route.key], ["fallbackKey", route.fallbackKey]] as const) {
      if (!source || cfParts(source).length === 0) continue;
      const index = source.kind === "composite" ? source.parts.findIndex((part) => part.kind === "cf") : -1;
      const field = `${route.field}.${name}${index >= 0 ? `.${index}` : ""}`;
      throw new ValidationError(field, `"cf:${(cfParts(source)[0] as { field: string }).field}" reads request.cf, which only Cloudflare Workers have; on Node key by "ip", a header or a cookie`);
    }
  }
}

/**
 * The gateway for `spillway serve`, or undefined when the config has no `origin`. Call it
 * at start: a bad gateway config throws a ValidationError naming the field.
 *
 * @example const fallback = createNodeGateway({ config, limiter }); await startServer({ config, limiter, port, fallback });
 */
export function createNodeGateway(options: NodeGatewayOptions): NodeGateway | undefined {
  const gateway = options.gateway ?? parseGatewayConfig(options.config);
  if (!gateway) return undefined;
  refuseCfKeys(gateway);
  const overrides = options.overrides ?? overridesFor(options.config, options.limiter, options.log);
  const core = new GatewayCore({ ...options, gateway, overrides });
  const agents = options.agents ?? originAgents();
  const app = createGatewayApp(core, { clientIpOf: nodeClientIp, fieldRepeated: nodeFieldRepeated, fetchOrigin: options.fetchOrigin ?? createNodeOriginFetch({ agents }) });
  const forwardAuth = new NodeForwardAuthEdge(core);
  if (options.fetchOrigin) return new NodeGateway(app, undefined, undefined, forwardAuth);
  return new NodeGateway(app, new NodeGatewayEdge(core, { agents }), new NodeUpgradeEdge(core), forwardAuth);
}
