import { problem, problemResponse } from "../http/problems.js";
import type { ForwardAuth } from "./forward-auth.js";
import type { HeaderLookup } from "./keys.js";

/**
 * Envoy's ext_authz HTTP service (docs/proxies.md): with `path_prefix` set to this, Envoy asks
 * `<prefix><original path and query>` with the original method and the fields
 * `allowed_headers` lets through (Host is the original's).
 */
export const ENVOY_FORWARD_AUTH_PREFIX = "/v1/forward-auth/envoy";

/** The check request as Envoy's HTTP service sends it. */
export interface EnvoyHttpCheck {
  method: string;
  /** The check request's target: the prefix, then the original path and query. */
  target: string;
  headers: HeaderLookup;
  /** Envoy's address (the socket's). */
  socketIp: string | undefined;
  signal: () => AbortSignal;
  defer: (promise: Promise<unknown>) => void;
}

/**
 * The decision for Envoy's HTTP shape: the method is the check request's own, the URI what
 * follows the prefix, the client's address X-Forwarded-For walked from Envoy's through
 * trustProxy. Envoy passes a non-200 answer to the client whole (status, fields, body).
 */
export function answerEnvoyHttp(auth: ForwardAuth, check: EnvoyHttpCheck): Promise<Response> {
  const refused = auth.refusedPeer(check.socketIp);
  if (refused) return Promise.resolve(refused);
  const uri = check.target.slice(ENVOY_FORWARD_AUTH_PREFIX.length);
  return auth.decideOriginal({
    method: { name: "the check request's method", value: check.method },
    uri: { name: `the path after ${ENVOY_FORWARD_AUTH_PREFIX} (Envoy's path_prefix, then the original path)`, value: uri },
    headers: check.headers,
    socketIp: check.socketIp,
    signal: check.signal,
    defer: check.defer,
  });
}

/** What Envoy's gRPC CheckRequest says of the request (attributes.request.http and attributes.source), as plain values. */
export interface EnvoyGrpcCheck {
  /** attributes.request.http, absent when Envoy sent none (the network filter, a bad client). */
  http?: {
    method?: string;
    /** Path and query, as in the request line. */
    path?: string;
    host?: string;
    /** Lower-case names, as HTTP/2 has them (pseudo-headers included). */
    headers: ReadonlyMap<string, string>;
  };
  /** attributes.source.address.socket_address.address: the client's address as Envoy saw it. */
  sourceIp?: string;
  /** The gRPC peer: Envoy's address. */
  peerIp: string | undefined;
  signal: () => AbortSignal;
  defer: (promise: Promise<unknown>) => void;
}

/** Envoy's header map as the gateway reads fields: Host from `host` (or `:authority`). */
class CheckHeaders implements HeaderLookup {
  readonly #headers: ReadonlyMap<string, string>;
  readonly #host: string | undefined;
  constructor(headers: ReadonlyMap<string, string>, host: string | undefined) {
    this.#headers = headers;
    this.#host = host || headers.get(":authority") || headers.get("host");
  }
  get(name: string): string | null {
    const lower = name.toLowerCase();
    if (lower === "host") return this.#host ?? null;
    return this.#headers.get(lower) ?? null;
  }
}

/**
 * The decision for Envoy's gRPC shape. The peer (Envoy) must be in trustProxy, as the HTTP
 * shapes' proxy must. The client's address walk starts at `source` (the address Envoy saw),
 * exactly as the gateway's walk starts at its socket: past it, X-Forwarded-For is read only
 * while each hop is in trustProxy. Without http attributes the answer is a 400 naming them.
 */
export function answerEnvoyGrpc(auth: ForwardAuth, check: EnvoyGrpcCheck): Promise<Response> {
  const refused = auth.refusedPeer(check.peerIp);
  if (refused) return Promise.resolve(refused);
  const http = check.http;
  if (!http) return Promise.resolve(badRequest("attributes.request.http is missing: Spillway decides HTTP requests only (the ext_authz HTTP filter sends them)"));
  if (!http.method) return Promise.resolve(badRequest("attributes.request.http.method is missing: the original request's method"));
  if (!http.path) return Promise.resolve(badRequest("attributes.request.http.path is missing: the original request's path and query"));
  return auth.decideOriginal({
    method: { name: "attributes.request.http.method", value: http.method },
    uri: { name: "attributes.request.http.path", value: http.path },
    headers: new CheckHeaders(http.headers, http.host),
    socketIp: check.sourceIp || check.peerIp,
    signal: check.signal,
    defer: check.defer,
  });
}

const badRequest = (detail: string) => problemResponse(problem(400, detail));
