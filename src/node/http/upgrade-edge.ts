import http, { type IncomingMessage, type Server } from "node:http";
import https from "node:https";
import type { Socket } from "node:net";
import type { Duplex } from "node:stream";
import { urlToHttpOptions } from "node:url";
import type { GatewayCore, GatewayStep } from "../../gateway/core.js";
import { UNROUTED, refusal } from "../../gateway/core.js";
import { OriginTimeoutError, gatewayTimeout } from "../../gateway/origin-timeout.js";
import { addExtraFields, answerHeaders, badGateway, originBasePath } from "../../gateway/proxy.js";
import { asWebSocketUpgrade, isWebSocketUpgrade } from "../../gateway/upgrade.js";
import { isSpillwayPath } from "../../http/app.js";
import { type CanonicalPath, canonicalPath, isRefused } from "../../http/path.js";
import { errorResponse } from "../../http/problems.js";
import { endToEndFields, originFields } from "./message-fields.js";
import { rawField } from "./raw-fields.js";
import { keepAlive, relaySockets } from "./socket-relay.js";
import { NodeRequestFacts } from "./request-facts.js";

type Forward = GatewayStep & { forward: true };

/**
 * WebSocket upgrades on `spillway serve` (docs/gateway.md, "WebSockets"): the http server's
 * 'upgrade' event, decided by the same GatewayCore as every request (a rate policy counts the
 * upgrade once; a concurrency lease lasts as long as the socket), then the handshake goes to
 * the origin and, after its 101, the raw sockets are piped both ways. Ordinary requests never
 * come here: node:http sends only the upgrades `takes` accepts (shouldUpgradeCallback).
 */
export class NodeUpgradeEdge {
  readonly #core: GatewayCore;
  readonly #client: typeof http | typeof https;
  readonly #originOptions: http.RequestOptions;
  readonly #basePath: string;
  /** Client sockets past their 101, cut when the server closes (they never "finish"). */
  readonly #switched = new Set<Duplex>();
  /** Lease releases under way, which a closing server waits for before it closes the store. */
  readonly #releasing = new Set<Promise<void>>();
  /** Client sockets from the upgrade request until they close (handshakes included). */
  readonly #open = new Set<Duplex>();

  constructor(core: GatewayCore) {
    this.#core = core;
    const origin = core.gateway.origin;
    this.#client = origin.protocol === "https:" ? https : http;
    const { hostname, port, protocol } = urlToHttpOptions(origin);
    this.#originOptions = { hostname, port, protocol };
    this.#basePath = originBasePath(origin);
  }

  /**
   * Whether an upgrade request is the gateway's to proxy: a WebSocket upgrade to a path that
   * is not Spillway's own. Anything else is served as a plain request (Upgrade stripped).
   */
  takes(req: IncomingMessage): boolean {
    const target = req.url ?? "";
    if (target[0] !== "/" || !isWebSocketUpgrade(req.method ?? "", { get: (name) => rawField(req.rawHeaders, name) ?? null })) return false;
    const path = pathOf(target);
    return isRefused(path) || !isSpillwayPath(path);
  }

  /** The 'upgrade' event of a request `takes` accepted. */
  handle(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    socket.on("error", () => {}); // a client that goes away closes the socket; 'close' does the rest
    keepAlive(socket);
    this.#open.add(socket);
    socket.once("close", () => this.#open.delete(socket));
    const path = pathOf(req.url!);
    if (isRefused(path)) return this.#answer(socket, refusal(false, path), undefined);
    const facts = new UpgradeFacts(req, socket, path);
    try {
      const step = this.#core.decide(facts);
      if (step instanceof Promise) step.then((decided) => this.#take(facts, decided, head), (error: unknown) => this.#fail(socket, error));
      else this.#take(facts, step, head);
    } catch (error) {
      this.#fail(socket, error);
    }
  }

  /** Whether a WebSocket or a lease release is still under way (a reload keeps this edge until none is). */
  get busy(): boolean {
    return this.#open.size > 0 || this.#releasing.size > 0;
  }

  /** Cuts every proxied WebSocket (the server is closing); resolves once their leases are released. */
  async closeAll(): Promise<void> {
    await Promise.all(
      [...this.#switched].map(
        (socket) =>
          new Promise<void>((resolve) => {
            socket.once("close", () => resolve());
            socket.destroy();
          }),
      ),
    );
    await Promise.all(this.#releasing);
  }

  #take(facts: UpgradeFacts, step: GatewayStep, head: Buffer): void {
    try {
      if (step.forward) this.#forward(facts, step, head);
      else this.#answer(facts.socket, step.response, step.route);
    } catch (error) {
      this.#fail(facts.socket, error);
    }
  }

  #fail(socket: Duplex, error: unknown): void {
    this.#answer(socket, errorResponse(error), undefined);
  }

  #report(route: string | undefined, status: number): void {
    this.#core.observer?.gatewayRequest?.({ route: route ?? UNROUTED, status });
  }

  /** An answer of the gateway's own (a problem), written on the raw socket, which then closes. */
  #answer(socket: Duplex, response: Response, route: string | undefined): void {
    this.#report(route, response.status);
    if (socket.destroyed) return;
    const fields: Record<string, string> = {};
    response.headers.forEach((value, name) => {
      if (name !== "content-length" && name !== "set-cookie") fields[name] = value;
    });
    response.arrayBuffer().then(
      (body) => {
        fields["content-length"] = String(body.byteLength);
        fields.connection = "close";
        socket.end(Buffer.concat([headOf(response.status, http.STATUS_CODES[response.status] ?? "", fields), Buffer.from(body)]));
      },
      () => socket.destroy(),
    );
  }

  #forward(facts: UpgradeFacts, step: Forward, head: Buffer): void {
    const { socket, req } = facts;
    const { lease } = step;
    if (socket.destroyed) {
      void lease?.release();
      return this.#report(step.route, 499);
    }
    // However the exchange ends (refused, timed out, switched and later closed), the client's socket closes.
    if (lease)
      socket.once("close", () => {
        const releasing = lease.release();
        this.#releasing.add(releasing);
        void releasing.finally(() => this.#releasing.delete(releasing));
      });
    const core = this.#core;
    const timing = step.route !== undefined && core.observer?.originDuration ? performance.now() : undefined;
    const outgoing = this.#client.request({
      ...this.#originOptions,
      method: "GET",
      path: `${this.#basePath}${step.target.pathname}${step.target.search}`,
      // The client's handshake as it was (key, version, subprotocols, extensions): after the 101 the bytes are piped.
      headers: asWebSocketUpgrade(endToEndFields(req.rawHeaders, true)!, false),
      agent: false,
    });
    let settled = false;
    const settle = () => {
      settled = true;
      outgoing.setTimeout(0);
      if (timing !== undefined) core.observer!.originDuration!({ route: step.route!, durationMs: performance.now() - timing });
    };
    // originTimeoutMs bounds the handshake: the origin owes every move until its answer.
    outgoing.setTimeout(step.timeoutMs, () => outgoing.destroy(new OriginTimeoutError(step.timeoutMs)));
    socket.once("close", () => {
      if (!settled) outgoing.destroy();
    });
    outgoing.on("error", (error) => {
      if (settled) return;
      settle();
      if (socket.destroyed) return this.#report(step.route, 499);
      const origin = core.gateway.origin;
      this.#answer(socket, error instanceof OriginTimeoutError ? gatewayTimeout(origin, error.timeoutMs) : badGateway(origin, error), step.route);
    });
    outgoing.on("response", (incoming) => {
      settle();
      this.#refused(socket, step, incoming);
    });
    outgoing.on("upgrade", (incoming: IncomingMessage, originSocket: Duplex, originHead: Buffer) => {
      settle();
      this.#switch(socket, head, step, incoming, originSocket, originHead);
    });
    outgoing.end();
  }

  /** The origin refused the upgrade (a 4xx, a 200): its answer goes to the client, which is then closed. */
  #refused(socket: Duplex, step: Forward, incoming: IncomingMessage): void {
    const status = incoming.statusCode ?? 0;
    this.#report(step.route, status);
    if (socket.destroyed) return void incoming.destroy();
    const fields = withExtra(incoming, step.extra);
    fields.connection = "close"; // the body ends where the connection does when it has no length
    socket.write(headOf(status, incoming.statusMessage ?? "", fields));
    incoming.once("error", () => socket.destroy());
    incoming.pipe(socket);
  }

  /** The origin switched: its 101 (with the RateLimit fields) to the client, then bytes both ways until either side closes. */
  #switch(socket: Duplex, clientHead: Buffer, step: Forward, incoming: IncomingMessage, originSocket: Duplex, originHead: Buffer): void {
    originSocket.on("error", () => {});
    this.#report(step.route, 101);
    if (socket.destroyed) return void originSocket.destroy();
    this.#switched.add(socket);
    // Messages are small and interactive: no Nagle delay on the origin's side (node:http's server sockets have none).
    (originSocket as Socket).setNoDelay?.(true);
    const fields = withExtra(incoming, step.extra);
    fields.connection = "Upgrade";
    fields.upgrade = rawField(incoming.rawHeaders, "upgrade") ?? "websocket";
    socket.write(headOf(101, incoming.statusMessage || "Switching Protocols", fields));
    if (originHead.length > 0) socket.write(originHead);
    if (clientHead.length > 0) originSocket.write(clientHead);
    relaySockets(socket, originSocket, () => this.#switched.delete(socket));
  }
}

/**
 * Lets `edge` take the server's WebSocket upgrades, where node:http can be told which upgrades
 * to take (shouldUpgradeCallback, Node 24.9 on): on older Node every request with an
 * Upgrade field would go to the 'upgrade' event, so upgrades stay plain requests there.
 */
export function serveUpgrades(server: Server, edgeOf: () => NodeUpgradeEdge | undefined): boolean {
  const settable = server as Server & { shouldUpgradeCallback?: (req: IncomingMessage) => boolean };
  if (typeof settable.shouldUpgradeCallback !== "function") return false;
  // The edge in force when the upgrade is taken decides it, even if a reload swaps it before the event.
  const takenBy = new WeakMap<IncomingMessage, NodeUpgradeEdge>();
  settable.shouldUpgradeCallback = (req) => {
    const edge = edgeOf();
    if (!edge?.takes(req)) return false;
    takenBy.set(req, edge);
    return true;
  };
  server.on("upgrade", (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const edge = takenBy.get(req);
    if (edge) edge.handle(req, socket, head);
    else socket.destroy();
  });
  return true;
}

/** The canonical path of an origin-form request target. */
function pathOf(target: string): ReturnType<typeof canonicalPath> {
  const query = target.indexOf("?");
  return canonicalPath(query < 0 ? target : target.slice(0, query));
}

/** The origin's end-to-end fields with the core's extra fields (RateLimit) added, as a record. */
function withExtra(incoming: IncomingMessage, extra: Record<string, string>): Record<string, string | string[]> {
  const origin = originFields(incoming.rawHeaders);
  if (!(origin instanceof Headers)) return addExtraFields(origin, extra);
  const headers = answerHeaders(origin, extra) as Headers;
  const fields: Record<string, string | string[]> = {};
  headers.forEach((value, name) => {
    if (name !== "set-cookie") fields[name] = value;
  });
  // Several Set-Cookie lines stay apart: headOf writes an array's values one line each.
  fields["set-cookie"] = headers.getSetCookie();
  return fields;
}

/** An HTTP/1.1 answer head, as node:http would write it (values are latin1, as node:http read them). */
function headOf(status: number, statusMessage: string, fields: Record<string, string | string[]>): Buffer {
  let head = `HTTP/1.1 ${status} ${statusMessage}\r\n`;
  for (const name in fields) {
    const value = fields[name]!;
    for (const line of Array.isArray(value) ? value : [value]) head += `${name}: ${line}\r\n`;
  }
  return Buffer.from(`${head}\r\n`, "latin1");
}

/** The core's view of an upgrade request: the same facts as a plain request's (NodeRequestFacts). */
class UpgradeFacts extends NodeRequestFacts {
  readonly socket: Duplex;

  constructor(req: IncomingMessage, socket: Duplex, path: CanonicalPath) {
    super(req, path);
    this.socket = socket;
  }

  /** The socket closed before the upgrade was decided (a delayed upgrade is dropped). */
  protected watchGone(gone: () => void): void {
    this.socket.once("close", gone);
  }
}
