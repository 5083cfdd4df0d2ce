import { problem, problemResponse } from "../http/problems.js";

/**
 * A request on its way to the origin. A plain object rather than a Request: constructing a
 * Request costs real time on Node, and the Node origin client never needs one.
 */
export interface OriginRequest {
  url: string;
  method: string;
  /** Already without hop-by-hop fields and Host. */
  headers: Headers;
  /** The client's body stream, passed on as it arrives; null for GET and HEAD. */
  body: ReadableStream<Uint8Array> | null;
  /** Aborted when the client goes away. */
  signal: AbortSignal;
}

/** Sends a request to the origin: global `fetch` on Workers, a node:http client on Node. */
export type FetchOrigin = (request: OriginRequest) => Promise<Response>;

/**
 * The default origin client: global fetch, not following redirects (a 3xx goes back to the
 * client as the origin sent it).
 */
export const globalFetchOrigin: FetchOrigin = ({ url, method, headers, body, signal }) => {
  const init: RequestInit & { duplex?: "half" } = { method, headers, body, signal, redirect: "manual" };
  if (body) init.duplex = "half";
  return fetch(url, init);
};

/**
 * Hop-by-hop fields (RFC 9110 §7.6.1) describe one connection, not the message: a proxy
 * must not forward them. `proxy-connection` is the non-standard spelling old clients send.
 */
export const HOP_BY_HOP_HEADERS = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"] as const;

/** A copy of `headers` without the hop-by-hop fields, including those the Connection field names. */
export function withoutHopByHop(headers: Headers): Headers {
  const copy = new Headers(headers);
  const named = headers.get("connection");
  if (named) for (const name of named.split(",")) if (name.trim()) copy.delete(name.trim());
  for (const name of HOP_BY_HOP_HEADERS) copy.delete(name);
  return copy;
}

/** The origin URL for a request: the origin's base path, then the request's path and query. */
export function originUrlFor(origin: URL, requestUrl: URL): string {
  const basePath = origin.pathname.endsWith("/") ? origin.pathname.slice(0, -1) : origin.pathname;
  return `${origin.origin}${basePath}${requestUrl.pathname}${requestUrl.search}`;
}

/**
 * The request as the origin gets it: unchanged but for the hop-by-hop fields and Host
 * (the origin client sets it). The body is the client's stream, not read here.
 */
export function originRequest(request: Request, url: string): OriginRequest {
  const headers = withoutHopByHop(request.headers);
  headers.delete("host");
  // Method first: on Node, touching `body` materializes a full Request even for a GET.
  const hasBody = request.method !== "GET" && request.method !== "HEAD" && request.body !== null;
  return { url, method: request.method, headers, body: hasBody ? request.body : null, signal: request.signal };
}

/**
 * The origin's answer as the client gets it: status and headers kept (hop-by-hop ones
 * removed), `extra` headers added, the body streamed through (`body` replaces it when the
 * caller wrapped it, e.g. to release a lease when it ends).
 */
export function clientResponse(origin: Response, extra: Record<string, string>, body: ReadableStream<Uint8Array> | null = origin.body): Response {
  const headers = withoutHopByHop(origin.headers);
  for (const [name, value] of Object.entries(extra)) {
    // RateLimit fields are structured lists: ours join the origin's own rather than replace them.
    if (/^ratelimit(-policy)?$/i.test(name)) headers.append(name, value);
    else headers.set(name, value);
  }
  // These statuses cannot carry a body (the Response constructor refuses one).
  const nullBody = origin.status === 204 || origin.status === 205 || origin.status === 304;
  if (nullBody && body) void body.cancel().catch(() => {});
  return new Response(nullBody ? null : body, { status: origin.status, statusText: origin.statusText, headers });
}

/** The 502 for an origin that could not be reached (refused, reset, DNS, TLS). */
export function badGateway(origin: URL, error: unknown): Response {
  const reason = error instanceof Error ? error.message : String(error);
  return problemResponse(problem(502, `the origin ${origin.host} could not be reached: ${reason}`));
}
