import http, { type IncomingMessage } from "node:http";
import https from "node:https";
import { Readable, pipeline } from "node:stream";
import type { Context, Hono } from "hono";
import type { SpillwayConfig } from "../config.js";
import type { Limiter } from "../limiter.js";
import { type GatewayConfig, parseGatewayConfig } from "./config.js";
import { createGateway } from "./gateway.js";
import type { LogFn } from "./limit.js";
import type { FetchOrigin } from "./proxy.js";

/**
 * The client address on Node: the socket's peer, as @hono/node-server passes it in
 * `c.env.incoming`. Client-sent headers (X-Forwarded-For, X-Real-IP, True-Client-IP,
 * CF-Connecting-IP) are never read here.
 */
export function nodeClientIp(c: Context): string | undefined {
  const env = c.env as { incoming?: IncomingMessage } | undefined;
  return env?.incoming?.socket?.remoteAddress;
}

const NULL_BODY_STATUSES = new Set([204, 205, 304]);

/**
 * An origin client on node:http. Node's global fetch (undici) decompresses gzip/br answers
 * but keeps their Content-Encoding, which a proxy would then mislabel; it is also slower.
 * This client passes bytes through untouched, streams both ways, and keeps connections alive.
 *
 * @example createGateway({ config, limiter, clientIpOf: nodeClientIp, fetchOrigin: createNodeOriginFetch() })
 */
export function createNodeOriginFetch(options: { maxSockets?: number } = {}): FetchOrigin {
  const agents = {
    "http:": new http.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 256 }),
    "https:": new https.Agent({ keepAlive: true, maxSockets: options.maxSockets ?? 256 }),
  };
  return (request) =>
    new Promise<Response>((resolve, reject) => {
      const url = new URL(request.url);
      const secure = url.protocol === "https:";
      const headers: Record<string, string> = {};
      request.headers.forEach((value, name) => {
        headers[name] = value;
      });
      const outgoing = (secure ? https : http).request(url, { method: request.method, headers, agent: agents[secure ? "https:" : "http:"], signal: request.signal });
      outgoing.on("error", reject);
      outgoing.on("response", (incoming) => {
        try {
          resolve(toResponse(incoming, request.method));
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
    });
}

function toResponse(incoming: IncomingMessage, method: string): Response {
  const headers = new Headers();
  const raw = incoming.rawHeaders;
  // rawHeaders keeps repeated fields (several Set-Cookie) as they came.
  for (let i = 0; i < raw.length; i += 2) {
    try {
      headers.append(raw[i]!, raw[i + 1]!);
    } catch {
      // A field the Headers class refuses (bad characters) is dropped, not fatal.
    }
  }
  const status = incoming.statusCode ?? 0;
  // 101 only follows an Upgrade, which the gateway strips; anything else is a broken origin.
  if (status < 200 || status > 599) throw new Error(`the origin answered with status ${status}`);
  if (method === "HEAD" || NULL_BODY_STATUSES.has(status)) {
    incoming.resume();
    return new Response(null, { status, statusText: incoming.statusMessage, headers });
  }
  const body = Readable.toWeb(incoming) as unknown as ReadableStream<Uint8Array>;
  return new Response(body, { status, statusText: incoming.statusMessage, headers });
}

export interface NodeGatewayOptions {
  config: SpillwayConfig;
  /** The gateway part, when already validated (e.g. before connecting to Redis). */
  gateway?: GatewayConfig;
  limiter: Limiter;
  fetchOrigin?: FetchOrigin;
  log?: LogFn;
}

/**
 * The gateway for `spillway serve`, or undefined when the config has no `origin`. Call it
 * at start: a bad gateway config throws a ValidationError naming the field.
 *
 * @example const fallback = createNodeGateway({ config, limiter }); await startServer({ config, limiter, port, fallback });
 */
export function createNodeGateway(options: NodeGatewayOptions): Hono | undefined {
  const gateway = options.gateway ?? parseGatewayConfig(options.config);
  if (!gateway) return undefined;
  return createGateway({ ...options, gateway, clientIpOf: nodeClientIp, fetchOrigin: options.fetchOrigin ?? createNodeOriginFetch() });
}
