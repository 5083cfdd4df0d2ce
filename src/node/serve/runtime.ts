import type { RequestListener } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import type { SpillwayConfig } from "../../config/config.js";
import { createApp } from "../../http/app.js";
import type { Observability } from "../../http/observe-routes.js";
import type { Limiter } from "../../core/limiter.js";
import type { Overrides } from "../../overrides/overrides.js";
import { SpillwayService } from "../../service/service.js";
import { NodeApiEdge } from "../http/api-edge.js";
import type { NodeGatewayEdge } from "../http/gateway-edge.js";
import { NodeGateway } from "../http/gateway.js";
import type { NodeUpgradeEdge } from "../http/upgrade-edge.js";
import type { NodeForwardAuthEdge } from "../http/forward-auth-edge.js";

/** What a reload replaces: the config and what is built from it (the gateway, the overrides cache). */
export interface RuntimeParts {
  config: SpillwayConfig;
  /** The gateway, mounted after /v1 and /healthz: a NodeGateway (createNodeGateway) or a Hono app. */
  fallback?: Hono | NodeGateway;
  /** Per-key limits for /v1 (default: the config's and the store's runtime table, overridesFor). */
  overrides?: Overrides;
}

/** What a server keeps across reloads: the store, the token, the observability routes, the address. */
export interface RuntimeFixture {
  limiter: Limiter;
  tokenOf: () => string | undefined;
  observability?: Observability;
  /** Why the observability paths are not served (ServerOptions.unobserved). */
  unobserved?: string;
  hostname: string;
  /** /healthz's 503 reason while the server must not be called ready (ServerOptions.notReady). */
  notReady?: () => string | undefined;
}

/**
 * One generation of the config as `spillway serve` serves it: the config and everything
 * prepared from it (the decision service, the routes and plans of the gateway, the edges).
 * Immutable: a reload builds a new one and swaps it in whole (RuntimeCell). Every request
 * reads the cell once, at its start, and finishes on the runtime it read; nothing else holds
 * config. State is not here: it lives in the store, by (key, policy name), and carries over.
 */
export interface ServerRuntime {
  readonly generation: number;
  readonly config: SpillwayConfig;
  readonly service: SpillwayService;
  /** The Hono app (Spillway's own paths, unusual request targets, the gateway's slow path). */
  readonly app: RequestListener;
  /** POSTs to the /v1 decision API spelled exactly. */
  readonly api: NodeApiEdge;
  /** The gateway's plain traffic, node:http in and out (absent without an origin). */
  readonly edge: NodeGatewayEdge | undefined;
  /** WebSocket upgrades to the origin (absent without an origin). */
  readonly upgrades: NodeUpgradeEdge | undefined;
  /** `/v1/forward-auth`, any method (absent without an origin: there are no routes then). */
  readonly forwardAuth: NodeForwardAuthEdge | undefined;
}

/** The one mutable place: the runtime in force. A reload is one assignment to `current`. */
export interface RuntimeCell {
  current: ServerRuntime;
}

/** Builds a runtime; throws (a ValidationError naming the field) before anything is swapped. */
export function buildRuntime(parts: RuntimeParts, fixture: RuntimeFixture, generation: number): ServerRuntime {
  const { config } = parts;
  const service = new SpillwayService(fixture.limiter, config, parts.overrides);
  const gateway = parts.fallback instanceof NodeGateway ? parts.fallback : undefined;
  const fallback = gateway ? gateway.app : (parts.fallback as Hono | undefined);
  const app = createApp({ service, tokenOf: fixture.tokenOf, fallback, observability: fixture.observability, unobserved: fixture.unobserved, notReady: fixture.notReady });
  return Object.freeze({
    generation,
    config,
    service,
    app: getRequestListener(app.fetch, { hostname: fixture.hostname }),
    api: new NodeApiEdge(service, fixture.tokenOf),
    edge: gateway?.edge,
    upgrades: gateway?.upgrades,
    forwardAuth: gateway?.forwardAuth,
  });
}
