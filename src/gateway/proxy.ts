import { problem, problemResponse } from "../http/problems.js";
import type { FetchOrigin, OriginAnswer, OriginRequest } from "./origin.js";
import { type OriginWait, cutWhenIdle } from "./origin-timeout.js";
import { UnrelayableStatusError, asWebSocketUpgrade, unrelayableStatus } from "./upgrade.js";

export type { FetchOrigin, OriginAnswer, OriginRequest } from "./origin.js";

/**
 * The default origin client: global fetch, not following redirects (a 3xx goes back to the
 * client as the origin sent it). Fetch has no idle timeout of its own: the body gets one.
 */
export const globalFetchOrigin: FetchOrigin = async ({ url, method, headers, body, signal, timeoutMs }) => {
  const init: RequestInit & { duplex?: "half" } = { method, headers, body, signal, redirect: "manual" };
  if (body) init.duplex = "half";
  const response = await fetch(url, init);
  if (!response.body) return response;
  return { status: response.status, statusText: response.statusText, headers: response.headers, body: cutWhenIdle(response.body, timeoutMs) };
};

/**
 * Hop-by-hop fields (RFC 9110 §7.6.1) describe one connection, not the message: a proxy
 * must not forward them. `proxy-connection` is the non-standard spelling old clients send.
 */
const HOP_BY_HOP_HEADERS = ["connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te", "trailer", "transfer-encoding", "upgrade"] as const;

export const HOP_BY_HOP: ReadonlySet<string> = new Set<string>(HOP_BY_HOP_HEADERS);

/** Statuses whose answer cannot carry a body (the Response constructor refuses one). */
export const NULL_BODY_STATUSES: ReadonlySet<number> = new Set([204, 205, 304]);

/**
 * Header fields as a record, one built and read several times per request. Nothing is
 * inherited (a field named "constructor" or "__proto__" is a field like any other), yet the
 * object keeps V8's fast layout, which Object.create(null) would give up.
 */
const FieldRecord = function FieldRecord() {} as unknown as { new (): Record<string, string>; prototype: object };
FieldRecord.prototype = Object.create(null);
export const newFieldRecord = (): Record<string, string> => new FieldRecord();

/** A copy of `headers` without the hop-by-hop fields, including those the Connection field names. */
export function withoutHopByHop(headers: Headers): Headers {
  const copy = new Headers(headers);
  const named = headers.get("connection");
  if (named) for (const name of named.split(",")) if (name.trim()) copy.delete(name.trim());
  for (const name of HOP_BY_HOP_HEADERS) copy.delete(name);
  return copy;
}

/** What of a request the origin URL is built from: the gateway passes the canonical path (path.ts). */
export interface OriginTarget {
  pathname: string;
  /** "" or "?…", as URL.search has it. */
  search: string;
}

/** The origin's path without its trailing slash ("" for "/"): each request's path is appended to it. */
export function originBasePath(origin: URL): string {
  return origin.pathname.endsWith("/") ? origin.pathname.slice(0, -1) : origin.pathname;
}

/** The origin URL for a request: the origin's base path, then the request's path and query. */
export function originUrlFor(origin: URL, target: OriginTarget): string {
  return `${origin.origin}${originBasePath(origin)}${target.pathname}${target.search}`;
}

/**
 * The request as the origin gets it: unchanged but for the hop-by-hop fields and Host
 * (the origin client sets it). The body is the client's stream, not read here; `wait` times
 * the origin and gives the request its signal. A WebSocket `upgrade` keeps its Upgrade (upgrade.ts).
 */
export function originRequest(request: Request, url: string, wait: OriginWait, upgrade = false, heldBody?: ReadableStream<Uint8Array>): OriginRequest {
  // Method first: on Node, touching `body` materializes a full Request even for a GET.
  const hasBody = request.method !== "GET" && request.method !== "HEAD" && request.body !== null;
  // `heldBody`: the same bytes, its prefix read for the body's fields (body-hold.ts).
  const body = hasBody ? wait.upload(heldBody ?? request.body!) : null;
  const fields = forwardedFields(request.headers);
  return new ForwardedRequest(url, request.method, upgrade ? asWebSocketUpgrade(fields, true) : fields, body, wait.signal, wait.timeoutMs);
}

/** An OriginRequest whose Headers object is only built when read: the Node origin client never reads it. */
class ForwardedRequest implements OriginRequest {
  readonly url: string;
  readonly method: string;
  readonly headerFields: Readonly<Record<string, string>>;
  readonly body: ReadableStream<Uint8Array> | null;
  readonly signal: AbortSignal;
  readonly timeoutMs: number;
  #headers: Headers | undefined;

  constructor(
    url: string,
    method: string,
    headerFields: Readonly<Record<string, string>>,
    body: ReadableStream<Uint8Array> | null,
    signal: AbortSignal,
    timeoutMs: number,
  ) {
    this.url = url;
    this.method = method;
    this.headerFields = headerFields;
    this.body = body;
    this.signal = signal;
    this.timeoutMs = timeoutMs;
  }

  get headers(): Headers {
    if (!this.#headers) {
      // Appended one by one: converting a record would drop a field named "__proto__".
      this.#headers = new Headers();
      for (const name in this.headerFields) this.#headers.append(name, this.headerFields[name]!);
    }
    return this.#headers;
  }
}

/**
 * The client's fields minus hop-by-hop ones (and those Connection names) and Host, in one
 * pass into a record: copying into a Headers and deleting from it costs a validation each.
 */
function forwardedFields(source: Headers): Record<string, string> {
  const connection = source.get("connection");
  const named = connection ? connection.split(",").map((name) => name.trim().toLowerCase()) : undefined;
  const fields = newFieldRecord();
  source.forEach((value, name) => {
    if (name !== "host" && !HOP_BY_HOP.has(name) && !named?.includes(name)) fields[name] = value;
  });
  return fields;
}

/** One field of an origin's answer, whichever form its headers take (`name` lower-case). */
export function originHeader(headers: OriginAnswer["headers"], name: string): string | null {
  return headers instanceof Headers ? headers.get(name) : (headers[name] ?? null);
}

/**
 * The origin's answer as the client gets it: status and headers kept (hop-by-hop ones
 * removed), `extra` headers added, the body streamed through (`body` replaces it when the
 * caller wrapped it, e.g. to release a lease when it ends).
 */
export function clientResponse(origin: OriginAnswer, extra: Record<string, string>, body: ReadableStream<Uint8Array> | null = origin.body): Response {
  const headers = answerHeaders(origin.headers, extra);
  const nullBody = NULL_BODY_STATUSES.has(origin.status);
  if (nullBody && body) void body.cancel().catch(() => {});
  return new Response(nullBody ? null : body, { status: origin.status, statusText: origin.statusText, headers });
}

/**
 * The fields of the client's answer: the origin's (hop-by-hop ones removed) with `extra`
 * added. A record stays a record (what node:http writes out directly).
 */
export function answerHeaders(origin: OriginAnswer["headers"], extra: Record<string, string>): Headers | Record<string, string> {
  return origin instanceof Headers ? headersWithExtra(origin, extra) : recordWithExtra(origin, extra);
}

/** RateLimit fields are structured lists: ours join the origin's own rather than replace them. */
const isListField = (lowerName: string) => lowerName === "ratelimit" || lowerName === "ratelimit-policy";

function headersWithExtra(origin: Headers, extra: Record<string, string>): Headers {
  const headers = withoutHopByHop(origin);
  for (const name in extra) {
    if (isListField(name.toLowerCase())) headers.append(name, extra[name]!);
    else headers.set(name, extra[name]!);
  }
  return headers;
}

/**
 * The record path: the same fields as headersWithExtra, as a plain record. On Node this is
 * what @hono/node-server writes out directly; a Headers object it would copy once more.
 */
function recordWithExtra(origin: Readonly<Record<string, string>>, extra: Record<string, string>): Record<string, string> {
  const headers = newFieldRecord();
  const connection = origin.connection;
  const named = connection ? connection.split(",").map((name) => name.trim().toLowerCase()) : undefined;
  for (const name in origin) {
    if (!HOP_BY_HOP.has(name) && !named?.includes(name)) headers[name] = origin[name]!;
  }
  return addExtraFields(headers, extra);
}

/** Adds `extra` to an answer's fields (a record without hop-by-hop fields), in place: RateLimit lists join the origin's own, the rest replace. */
export function addExtraFields(headers: Record<string, string>, extra: Record<string, string>): Record<string, string> {
  for (const name in extra) {
    // The origin's record has lower-case names; Spillway's fields keep their spelling (RateLimit).
    const lower = name.toLowerCase();
    const own = headers[lower];
    if (own !== undefined && lower !== name) delete headers[lower];
    headers[name] = isListField(lower) && own !== undefined ? `${own}, ${extra[name]}` : extra[name]!;
  }
  return headers;
}

/** The 502 for an origin that could not be reached (refused, reset, DNS, TLS). */
export function badGateway(origin: URL, error: unknown): Response {
  if (error instanceof UnrelayableStatusError) return unrelayableStatus(origin, error.status);
  const reason = error instanceof Error ? error.message : String(error);
  return problemResponse(problem(502, `the origin ${origin.host} could not be reached: ${reason}`));
}
