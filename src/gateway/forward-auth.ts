import { canonicalPath, isRefused } from "../http/path.js";
import { problem, problemResponse } from "../http/problems.js";
import { type GatewayCore, type GatewayFacts, type GatewayStep, refusal } from "./core.js";
import { anyRangeContains, parseIp } from "./ip.js";
import type { HeaderLookup } from "./keys.js";

/** The endpoint proxies ask (nginx auth_request, Caddy forward_auth, Traefik ForwardAuth): docs/proxies.md. */
export const FORWARD_AUTH_PATH = "/v1/forward-auth";

/** On every answer: the route that decided (`routes.0`), or `none` when no route matched. */
export const FORWARD_AUTH_ROUTE_HEADER = "spillway-route";

/** With deny_status: the status the decision had before it was turned into 401 or 403. */
export const FORWARD_AUTH_STATUS_HEADER = "spillway-status";

/** A method as RFC 9110 spells one (a token); anything else is a malformed forwarded field. */
const METHOD_TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;

/** What the proxy sent, read from its fields and the socket it came on. */
export interface ForwardAuthInput {
  /** The check request's own fields (the proxy's X-Forwarded-* or X-Original-*, and the client's it passes). */
  headers: HeaderLookup;
  /** The proxy's address, as the runtime knows it. */
  socketIp: string | undefined;
  /** The check request's query: `deny_status=401|403` turns a refusal into that status (nginx). */
  searchParams: URLSearchParams;
  signal: () => AbortSignal;
  defer: (promise: Promise<unknown>) => void;
}

const badRequest = (detail: string) => problemResponse(problem(400, detail));

/** A forwarded value with the field it came in, for the 400 that names it. */
export interface NamedField {
  name: string;
  value: string;
}

/** The original request as a shape reads it (docs/proxies.md): what ForwardAuth.decideOriginal decides. */
export interface OriginalRequest {
  method: NamedField;
  /** Origin-form: path and query. */
  uri: NamedField;
  /** The original request's fields; `host` is its Host. */
  headers: HeaderLookup;
  /** Where the client's address walk through trustProxy starts: the proxy's address, or the client's as the proxy saw it. */
  socketIp: string | undefined;
  signal: () => AbortSignal;
  defer: (promise: Promise<unknown>) => void;
}

/**
 * The original request's view: Host is X-Forwarded-Host when the proxy sets it (Traefik,
 * Caddy), else the Host the proxy passed (nginx's recipe passes the original Host).
 */
class ForwardedHeaders implements HeaderLookup {
  readonly #headers: HeaderLookup;
  constructor(headers: HeaderLookup) {
    this.#headers = headers;
  }
  get(name: string): string | null {
    if (name.toLowerCase() === "host") return this.#headers.get("x-forwarded-host") ?? this.#headers.get("host");
    return this.#headers.get(name);
  }
  /** A key's field sent on two lines is the gateway's 400 here too (keys.ts). */
  repeated(lowerName: string): boolean {
    return this.#headers.repeated?.(lowerName) ?? false;
  }
}

/** The first of the fields set, with the name it came under. */
function firstField(headers: HeaderLookup, names: readonly string[]): NamedField | undefined {
  for (const name of names) {
    const value = headers.get(name);
    if (value !== null) return { name, value };
  }
  return undefined;
}

/**
 * The forward-auth decision (docs/proxies.md): the original request, as the proxy forwards
 * its method, URI, host and client address, becomes the gateway core's facts, and the core
 * decides it exactly as it decides a request through the gateway (routes, keys, lists,
 * overrides, dry run). Admitted: 200 with the RateLimit fields; refused: the gateway's own
 * answer (429 with Retry-After, 403, 400). Forwarded fields are believed only from
 * `trustProxy`: the proxy's address is the capability, no Bearer token is asked.
 */
export class ForwardAuth {
  readonly #core: GatewayCore;
  constructor(core: GatewayCore) {
    this.#core = core;
  }

  async answer(input: ForwardAuthInput): Promise<Response> {
    const denyStatus = input.searchParams.get("deny_status");
    if (denyStatus !== null && denyStatus !== "401" && denyStatus !== "403") return badRequest(`deny_status must be 401 or 403 (what nginx's auth_request passes on), got "${denyStatus}"`);
    const response = await this.#decide(input);
    if (denyStatus === null || response.status < 300) return response;
    // nginx's auth_request understands 2xx, 401 and 403 only (any other status is its 500): a
    // 429 goes back as the status asked for and every other refusal as 403, fields kept, the
    // real status in Spillway-Status, for the proxy's error_page to turn into the client's 429.
    const headers = new Headers(response.headers);
    headers.set(FORWARD_AUTH_STATUS_HEADER, String(response.status));
    return new Response(response.body, { status: response.status === 429 ? Number(denyStatus) : 403, headers });
  }

  async #decide(input: ForwardAuthInput): Promise<Response> {
    const refused = this.refusedPeer(input.socketIp);
    if (refused) return refused;
    const { headers } = input;
    const method = firstField(headers, ["x-forwarded-method", "x-original-method"]);
    if (!method) return badRequest("the request carries neither X-Forwarded-Method nor X-Original-Method: the proxy must forward the original request's method");
    const uri = firstField(headers, ["x-forwarded-uri", "x-original-uri"]);
    if (!uri) return badRequest("the request carries neither X-Forwarded-Uri nor X-Original-URI: the proxy must forward the original request's URI");
    return this.decideOriginal({ method, uri, headers: new ForwardedHeaders(headers), socketIp: input.socketIp, signal: input.signal, defer: input.defer });
  }

  /**
   * The 403 for a peer whose forwarded fields are not to be believed (trustProxy empty, or
   * the peer not in it), else undefined. Every shape asks it first, with the address of the
   * proxy that sent the check (a socket's, a gRPC peer's).
   */
  refusedPeer(peerIp: string | undefined): Response | undefined {
    const trusted = this.#core.gateway.trustProxy;
    const peer = peerIp === undefined ? undefined : parseIp(peerIp);
    if (trusted.length === 0) return forbidden("trustProxy is empty: forward-auth believes forwarded fields only from the proxy addresses trustProxy lists");
    if (!peer || !anyRangeContains(trusted, peer)) return forbidden(`${peerIp ?? "this address"} is not in trustProxy: forward-auth believes forwarded fields only from the proxy addresses trustProxy lists`);
    return undefined;
  }

  /**
   * The decision for an original request however it came (the X-Forwarded-* fields, Envoy's
   * path prefix, Envoy's CheckRequest): its method and URI named by the field they came in,
   * for the 400s. `socketIp` is where the client's address walk starts (gateway/ip.ts).
   */
  async decideOriginal(original: OriginalRequest): Promise<Response> {
    const { method, uri, headers } = original;
    if (!METHOD_TOKEN.test(method.value)) return badRequest(`${method.name} must be an HTTP method, got "${method.value.slice(0, 40)}"`);
    if (!uri.value.startsWith("/")) return badRequest(`${uri.name} must be an origin-form URI (a path starting with "/"), got "${uri.value.slice(0, 80)}"`);
    const query = uri.value.search(/[?#]/);
    const rawPath = query < 0 ? uri.value : uri.value.slice(0, query);
    const path = canonicalPath(rawPath);
    if (isRefused(path)) return refusal(false, path);
    let url: URL;
    try {
      url = new URL(uri.value, "http://forwarded.invalid");
    } catch {
      return badRequest(`${uri.name} is not a URI: "${uri.value.slice(0, 80)}"`);
    }
    const facts: GatewayFacts = {
      method: method.value.toUpperCase(),
      path,
      search: url.search,
      url: () => new URL(`${url.pathname}${url.search}`, `http://${headers.get("host") ?? "localhost"}`),
      headers,
      socketIp: original.socketIp,
      signal: original.signal,
      defer: original.defer,
    };
    const decided = this.#core.decide(facts);
    const step = decided instanceof Promise ? await decided : decided;
    return this.#answerOf(step);
  }

  #answerOf(step: GatewayStep): Response {
    const route = step.route === undefined ? "none" : `routes.${step.route}`;
    if (!step.forward) {
      const headers = new Headers(step.response.headers);
      headers.set(FORWARD_AUTH_ROUTE_HEADER, route);
      return new Response(step.response.body, { status: step.response.status, headers });
    }
    // The origin's answer never comes here: a cost it reports cannot be read, and a concurrency
    // slot would be released before the upstream is done (so it would bound nothing). Such a
    // route is refused rather than let through uncounted.
    if (step.lease) {
      void step.lease.release();
      return notHere(route, "holds a concurrency lease for the whole exchange, whose end a forward-auth service never sees");
    }
    if (step.count) return notHere(route, "counts what the origin answers (count, or a cost from the answer), which a forward-auth service never sees");
    return new Response(null, { status: 200, headers: { ...step.extra, [FORWARD_AUTH_ROUTE_HEADER]: route } });
  }
}

const notHere = (route: string, why: string) =>
  problemResponse(problem(501, `${route} ${why}: serve this route through the gateway`, { title: "Not Implemented" }), { [FORWARD_AUTH_ROUTE_HEADER]: route });

const forbidden = (detail: string) => problemResponse(problem(403, detail, { title: "Forbidden" }));
