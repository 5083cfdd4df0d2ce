// node/serve: the `spillway serve` process: its server, runtime parts and dispatch, reload and its
// signals, notices, and the store opened from flags.
import type { AddressInfo } from "node:net";
import { createServer } from "node:http";
import type { Hono } from "hono";
import type { SpillwayConfig } from "../../config/config.js";
import { ValidationError } from "../../core/validation.js";
import type { Observability } from "../../http/observe-routes.js";
import type { Limiter } from "../../core/limiter.js";
import type { Overrides } from "../../overrides/overrides.js";
import { runtimeListener } from "./dispatch.js";
import type { ForwardAuth } from "../../gateway/forward-auth.js";
import type { NodeGateway } from "../http/gateway.js";
import { type RuntimeCell, type RuntimeFixture, type RuntimeParts, type ServerRuntime, buildRuntime } from "./runtime.js";
import { type NodeUpgradeEdge, serveUpgrades } from "../http/upgrade-edge.js";
import { closeHttpServer } from "../http/close-server.js";

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
  /** Why the observability paths are not served, for their 404 (`spillway serve runs with --no-metrics`). */
  unobserved?: string;
  /** How long close() lets in-flight requests finish before cutting them (default 10 s). */
  drainTimeoutMs?: number;
  /** Client connection timeouts (see DEFAULT_SERVER_TIMEOUTS). */
  timeouts?: Partial<ServerTimeouts>;
  /**
   * Per-key limits for /v1 (default: the config's and `limiter`'s runtime table, overridesFor).
   * Pass the gateway's own when `limiter` is a wrapper (observed) of the store the gateway uses.
   */
  overrides?: Overrides;
  /**
   * While this answers a reason, /healthz answers 503 with it, whatever the store says: a
   * worker of `spillway serve --workers N` until every worker listens (worker-link.ts).
   */
  notReady?: () => string | undefined;
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
  /** The runtime generation in force: 1 at start, one more per reload. */
  readonly generation: number;
  /**
   * Swaps in a new config (and what is built from it) for the requests that start from now on:
   * requests in flight finish on the one they started with, connections stay open, and state
   * (in the store, by key and policy name) carries over. Throws, swapping nothing, when the
   * parts cannot be served. Returns the new generation.
   */
  reload(parts: RuntimeParts): number;
  /** The forward-auth decision of the runtime in force (absent without routes): Envoy's gRPC Check asks it per call. */
  readonly forwardAuth: ForwardAuth | undefined;
  /** Stops accepting, lets in-flight requests finish, closes connections and the store. */
  close(): Promise<void>;
}

/**
 * Serves the Spillway app on Node: the /v1 API, /healthz, observability and the gateway, from
 * one runtime (runtime.ts) read once per request and swapped whole by `reload`.
 *
 * @example const server = await startServer({ config, limiter: new MemoryStore(), port: 8787 });
 */
export function startServer(options: ServerOptions): Promise<RunningServer> {
  const hostname = options.hostname ?? "127.0.0.1";
  const fixture: RuntimeFixture = { limiter: options.limiter, tokenOf: () => options.token ?? process.env.SPILLWAY_TOKEN, observability: options.observability, unobserved: options.unobserved, hostname, notReady: options.notReady };
  const cell: RuntimeCell = { current: buildRuntime(options, fixture, 1) };
  // Upgrade edges with WebSockets still open, the retired ones included: close() cuts them all.
  const upgradeEdges = new Set<NodeUpgradeEdge>();
  const keepUpgrades = (runtime: ServerRuntime) => {
    for (const edge of upgradeEdges) if (!edge.busy) upgradeEdges.delete(edge);
    if (runtime.upgrades) upgradeEdges.add(runtime.upgrades);
  };
  keepUpgrades(cell.current);
  return new Promise((resolve, reject) => {
    const serverOptions = nodeServerOptions(options.timeouts);
    const server = createServer(serverOptions, runtimeListener(cell));
    serveUpgrades(server, () => cell.current.upgrades);
    server.listen(options.port, hostname, () => {
      const info = server.address() as AddressInfo;
      const host = hostname.includes(":") ? `[${hostname}]` : hostname;
      resolve({
        port: info.port,
        url: `http://${host}:${info.port}`,
        get generation() {
          return cell.current.generation;
        },
        get forwardAuth() {
          return cell.current.forwardAuth?.auth;
        },
        reload(parts) {
          const next = buildRuntime(parts, fixture, cell.current.generation + 1);
          cell.current = next;
          keepUpgrades(next);
          return next.generation;
        },
        close: () => closeServer(server, options, upgradeEdges),
      });
    });
    server.once("error", reject);
  });
}

type NodeServer = ReturnType<typeof createServer>;

async function closeServer(server: NodeServer, options: ServerOptions, upgradeEdges: ReadonlySet<NodeUpgradeEdge>): Promise<void> {
  const closed = closeHttpServer(server, options.drainTimeoutMs ?? 10_000);
  // A proxied WebSocket has no end to wait for: cut now, its lease released before the store closes.
  const switchedClosed = Promise.all([...upgradeEdges].map((edge) => edge.closeAll()));
  await closed;
  await switchedClosed;
  await options.limiter.close?.();
}
