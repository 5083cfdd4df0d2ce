import type { AddressInfo } from "node:net";
import { createServer } from "node:http";
import type { Hono } from "hono";
import type { SpillwayConfig } from "../config.js";
import { ValidationError } from "../core/validation.js";
import { createApp } from "../http/app.js";
import type { Observability } from "../http/observe-routes.js";
import type { Limiter } from "../limiter.js";
import { SpillwayService } from "../service.js";
import type { Overrides } from "../overrides/overrides.js";
import { NodeApiEdge } from "./api-edge.js";
import { serverListener } from "./dispatch.js";
import { NodeGateway } from "./gateway.js";
import { serveUpgrades } from "./upgrade-edge.js";

export interface ServerOptions {
  config: SpillwayConfig;
  limiter: Limiter;
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1; set 0.0.0.0 to listen on every interface. */
  hostname?: string;
  /** The /v1 bearer token (default: SPILLWAY_TOKEN from the environment, read per request). */
  token?: string;
  /** The gateway, mounted after /v1 and /healthz: a NodeGateway (createNodeGateway) or a Hono app. */
  fallback?: Hono | NodeGateway;
  /** /v1/top, /v1/stats, /metrics and /dashboard (see createNodeObservability). */
  observability?: Observability;
  /** How long close() lets in-flight requests finish before cutting them (default 10 s). */
  drainTimeoutMs?: number;
  /** Client connection timeouts (see DEFAULT_SERVER_TIMEOUTS). */
  timeouts?: Partial<ServerTimeouts>;
  /**
   * Per-key limits for /v1 (default: the config's and `limiter`'s runtime table, overridesFor).
   * Pass the gateway's own when `limiter` is a wrapper (observed) of the store the gateway uses.
   */
  overrides?: Overrides;
}

/** How long a client may take, on its connection to Spillway. */
export interface ServerTimeouts {
  /** To send a request's headers; past it the connection is closed (a slowloris). */
  headersTimeoutMs: number;
  /** To send a whole request, body included (0: no limit, for long uploads). Not the answer's time. */
  requestTimeoutMs: number;
  /** An idle keep-alive connection is closed after this long. */
  keepAliveTimeoutMs: number;
}

/**
 * Timeouts for a server facing clients in front of an origin. Headers: 15 s (Node's 60 s let a
 * client trickling one byte a second hold a socket for a minute; nginx's client_header_timeout
 * is 60 s, Envoy's request_headers_timeout is off). Whole request: Node's 300 s, which bounds a
 * stalled upload; the wait for the origin is originTimeoutMs's, not this. Keep-alive: 65 s, above
 * the 60 s idle timeout of common load balancers, which must close an idle connection before
 * the server does (else one may send a request onto a socket being closed, a 502 at the balancer).
 */
const DEFAULT_SERVER_TIMEOUTS: ServerTimeouts = { headersTimeoutMs: 15_000, requestTimeoutMs: 300_000, keepAliveTimeoutMs: 65_000 };

/**
 * Node's options for `timeouts`. Node checks headers and request deadlines on an interval (30 s
 * by default, so a 15 s limit could cut at 45 s): here a quarter of the headers timeout, 1 s at most.
 */
export function nodeServerOptions(timeouts: Partial<ServerTimeouts> = {}) {
  const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = { ...DEFAULT_SERVER_TIMEOUTS, ...timeouts };
  if (requestTimeoutMs > 0 && headersTimeoutMs > requestTimeoutMs) {
    throw new ValidationError("headersTimeoutMs", `must not exceed requestTimeoutMs (${requestTimeoutMs}), got ${headersTimeoutMs}`);
  }
  return {
    headersTimeout: headersTimeoutMs,
    requestTimeout: requestTimeoutMs,
    keepAliveTimeout: keepAliveTimeoutMs,
    connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(headersTimeoutMs / 4))),
  };
}

export interface RunningServer {
  port: number;
  url: string;
  /** Stops accepting, lets in-flight requests finish, closes connections and the store. */
  close(): Promise<void>;
}

/**
 * Serves the Spillway app on Node with @hono/node-server.
 *
 * @example const server = await startServer({ config, limiter: new MemoryStore(), port: 8787 });
 */
export function startServer(options: ServerOptions): Promise<RunningServer> {
  const service = new SpillwayService(options.limiter, options.config, options.overrides);
  const tokenOf = () => options.token ?? process.env.SPILLWAY_TOKEN;
  const gateway = options.fallback instanceof NodeGateway ? options.fallback : undefined;
  const fallback = gateway ? gateway.app : (options.fallback as Hono | undefined);
  const app = createApp({ service, tokenOf, fallback, observability: options.observability });
  const hostname = options.hostname ?? "127.0.0.1";
  return new Promise((resolve, reject) => {
    const serverOptions = nodeServerOptions(options.timeouts);
    const server = createServer(serverOptions, serverListener(app, gateway, hostname, new NodeApiEdge(service, tokenOf)));
    if (gateway?.upgrades) serveUpgrades(server, gateway.upgrades);
    server.listen(options.port, hostname, () => {
      const info = server.address() as AddressInfo;
      const host = hostname.includes(":") ? `[${hostname}]` : hostname;
      resolve({ port: info.port, url: `http://${host}:${info.port}`, close: () => closeServer(server, options, gateway) });
    });
    server.once("error", reject);
  });
}

type NodeServer = ReturnType<typeof createServer>;

async function closeServer(server: NodeServer, options: ServerOptions, gateway: NodeGateway | undefined): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  // A proxied WebSocket has no end to wait for: cut now, its lease released before the store closes.
  const switchedClosed = gateway?.upgrades?.closeAll();
  // Idle keep-alive sockets would hold close() open forever; busy ones finish their request.
  (server as { closeIdleConnections?: () => void }).closeIdleConnections?.();
  const timer = setTimeout(() => (server as { closeAllConnections?: () => void }).closeAllConnections?.(), options.drainTimeoutMs ?? 10_000);
  await closed;
  clearTimeout(timer);
  await switchedClosed;
  await options.limiter.close?.();
}
