import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { getRequestListener } from "@hono/node-server";
import type { Hono } from "hono";
import { isSpillwayPath } from "../http/app.js";
import { canonicalPath, isRefused } from "../http/path.js";
import type { NodeGateway } from "./gateway.js";

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
 * The request listener of `spillway serve`: Spillway's own paths (/v1, /healthz, /metrics,
 * /dashboard, however spelled) and unusual request targets go to the Hono app; the gateway's
 * plain traffic goes straight to the node:http edge, which costs a fraction of the conversion
 * to web Request and Response.
 */
export function serverListener(app: Hono, gateway: NodeGateway | undefined, hostname: string): RequestListener {
  const appListener = getRequestListener(app.fetch, { hostname });
  const edge = gateway?.edge;
  if (!edge) return appListener;
  return (req: IncomingMessage, res: ServerResponse) => {
    const target = req.url ?? "";
    if (!PLAIN_TARGET.test(target) || DOT_SEGMENT.test(target) || !plainHost(req)) return void appListener(req, res);
    const query = target.indexOf("?");
    const fragment = target.indexOf("#");
    const end = fragment >= 0 && (query < 0 || fragment < query) ? fragment : query;
    const path = canonicalPath(end < 0 ? target : target.slice(0, end));
    if (isRefused(path) || isSpillwayPath(path)) return void appListener(req, res);
    edge.handle(req, res, path);
  };
}
