import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import { apiRouteOf } from "../../http/api.js";
import { isSpillwayPath } from "../../http/app.js";
import { canonicalPath, isRefused } from "../../http/path.js";
import type { NodeApiEdge } from "../http/api-edge.js";
import type { NodeGateway } from "../http/gateway.js";
import { FORWARD_AUTH_PATH } from "../../gateway/forward-auth.js";
import { ENVOY_FORWARD_AUTH_PREFIX } from "../../gateway/forward-auth-envoy.js";
import type { ServerRuntime } from "./runtime.js";

// @hono/node-server builds a request's URL from the target as sent only when the target and
// Host match these (its own tests); anything else it rewrites through `new URL` (dot segments,
// percent-encoding) or refuses (a bad Host). Such requests go to the Hono edge, so that every
// spelling is decided exactly as before; plain ones take the node:http edge.
const PLAIN_TARGET = /^\/[!#$&-;=?-[\]_a-z~]*$/;
const DOT_SEGMENT = /\/\.\.?(?:[/?#]|$)/;
const PLAIN_HOST = /^[a-z0-9._-]+(?::(?:[1-5]\d{3,4}|[6-9]\d{3}))?$/;

function plainHost(req: IncomingMessage): boolean {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]!.length === 4 && raw[i]!.toLowerCase() === "host") return PLAIN_HOST.test(raw[i + 1]!);
  return false;
}

/**
 * The request listener of `spillway serve`: POSTs to the /v1 decision API spelled exactly go
 * to the node:http API edge; Spillway's other paths (/v1, /healthz, /metrics, /dashboard,
 * however spelled) and unusual request targets go to the Hono app; the gateway's plain
 * traffic goes straight to the node:http gateway edge. The node:http edges save the
 * conversion to web Request and Response, which costs a fraction of the throughput.
 *
 * The runtime in force is read once per request, at its start (one property read): a reload
 * that swaps it meanwhile leaves this request on the one it read.
 */
export function runtimeListener(cell: { readonly current: Pick<ServerRuntime, "app" | "api" | "edge"> & Partial<Pick<ServerRuntime, "forwardAuth">> }): RequestListener {
  return (req: IncomingMessage, res: ServerResponse) => {
    const runtime = cell.current;
    const target = req.url ?? "";
    // A proxy's check request, any method, spelled exactly (its query may say deny_status).
    if (runtime.forwardAuth && isForwardAuth(target)) return runtime.forwardAuth.handle(req, res);
    if (runtime.forwardAuth && isEnvoyCheck(target)) return runtime.forwardAuth.handleEnvoy(req, res);
    if (!PLAIN_TARGET.test(target) || DOT_SEGMENT.test(target) || !plainHost(req)) return void runtime.app(req, res);
    const query = target.indexOf("?");
    const fragment = target.indexOf("#");
    const end = fragment >= 0 && (query < 0 || fragment < query) ? fragment : query;
    const rawPath = end < 0 ? target : target.slice(0, end);
    const route = req.method === "POST" ? apiRouteOf(rawPath) : undefined;
    if (route) return runtime.api.handle(req, res, route);
    const edge = runtime.edge;
    if (!edge) return void runtime.app(req, res);
    const path = canonicalPath(rawPath);
    if (isRefused(path) || isSpillwayPath(path)) return void runtime.app(req, res);
    edge.handle(req, res, path);
  };
}

/** `/v1/forward-auth`, alone or with a query: the forwarded request is in its fields. */
function isForwardAuth(target: string): boolean {
  if (!target.startsWith(FORWARD_AUTH_PATH)) return false;
  return target.length === FORWARD_AUTH_PATH.length || target[FORWARD_AUTH_PATH.length] === "?";
}

/** `/v1/forward-auth/envoy` then the original path (Envoy's path_prefix): `/v1/forward-auth/envoy/…`, `/v1/forward-auth/envoy?…`. */
function isEnvoyCheck(target: string): boolean {
  if (!target.startsWith(ENVOY_FORWARD_AUTH_PREFIX)) return false;
  const next = target[ENVOY_FORWARD_AUTH_PREFIX.length];
  return next === undefined || next === "/" || next === "?";
}

/** The listener over one fixed app and edges (no reload): the Hono app, the gateway, the API edge. */
export function serverListener(app: Hono, gateway: NodeGateway | undefined, hostname: string, api: NodeApiEdge): RequestListener {
  return runtimeListener({ current: { app: getRequestListener(app.fetch, { hostname }), api, edge: gateway?.edge, forwardAuth: gateway?.forwardAuth } });
}
