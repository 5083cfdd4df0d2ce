import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import type { Duplex } from "node:stream";
import { urlToHttpOptions } from "node:url";
import type { GatewayCore, GatewayStep } from "../../gateway/core.js";
import { UNROUTED, refusal } from "../../gateway/core.js";
import { OriginClock, OriginTimeoutError, gatewayTimeout } from "../../gateway/origin-timeout.js";
import { UnrelayableStatusError } from "../../gateway/upgrade.js";
import { NULL_BODY_STATUSES, addExtraFields, answerHeaders, badGateway, originBasePath } from "../../gateway/proxy.js";
import type { BodyTap } from "../../gateway/answer-count.js";
import { NODE_TAP_DECODINGS, decodingTap } from "./usage-decode.js";
import type { CanonicalPath } from "../../http/path.js";
import { errorResponse } from "../../http/problems.js";
import { rawField } from "./raw-fields.js";
import { endToEndFields, flatFields, originFields } from "./message-fields.js";
import { NodeRequestFacts, quietly } from "./request-facts.js";
import { type OriginAgents, RETRIABLE_METHODS, lostIdleRace, originAgents } from "./origin-agents.js";
import { TurnQueue } from "./turn-queue.js";

type Forward = GatewayStep & { forward: true };

/**
 * The gateway's Node edge: node:http in, node:http out, around the same GatewayCore the
 * Worker runs. @hono/node-server would turn every request and answer into a web Request and
 * Response and every body into a web stream, which costs more than the proxying itself; here
 * bytes go from socket to socket (pipe, with backpressure) and headers stay records.
 * Only what the core answers itself (400, 403, 429, 5xx problems) is a Response.
 *
 * With a store in this process (the memory store), a turn's requests are decided and forwarded
 * together at its end (TurnQueue): a fifth less CPU per request in bench:gateway. With Redis
 * they are decided as they come: each command goes out while Node parses the next request, the
 * replies of one read are forwarded together, and a turn-end hop measured slower there.
 */
export class NodeGatewayEdge {
  readonly #core: GatewayCore;
  readonly #client: typeof http | typeof https;
  readonly #agent: http.Agent;
  readonly #originOptions: http.RequestOptions;
  readonly #basePath: string;
  /** Set when a turn's requests are decided together at its end. */
  readonly #turn: TurnQueue<Exchange> | undefined;

  /** `agents`: the server's pools to the origin, shared across reloads (default: pools of this edge's own). */
  constructor(core: GatewayCore, options: { maxSockets?: number; agents?: OriginAgents } = {}) {
    this.#core = core;
    const origin = core.gateway.origin;
    const secure = origin.protocol === "https:";
    this.#client = secure ? https : http;
    this.#agent = (options.agents ?? originAgents({ maxSockets: options.maxSockets }))[secure ? "https:" : "http:"];
    // Host, port and protocol once (urlToHttpOptions unwraps an IPv6 literal's brackets).
    const { hostname, port, protocol } = urlToHttpOptions(origin);
    this.#originOptions = { hostname, port, protocol };
    this.#basePath = originBasePath(origin);
    this.#turn = core.limiter.kind === "memory" ? new TurnQueue((exchange) => this.#start(exchange)) : undefined;
  }

  /** Serves one request whose canonical path the server already computed (and found not Spillway's). */
  handle(req: IncomingMessage, res: ServerResponse, path: CanonicalPath): void {
    const exchange = new Exchange(req, res, path);
    if (this.#turn) this.#turn.push(exchange);
    else this.#start(exchange);
  }

  #start(exchange: Exchange): void {
    try {
      // Request smuggling: a message framed two ways is refused (Node's parser already does so).
      if (exchange.framedTwice()) return this.#answer(exchange, refusal(true, exchange.path), undefined);
      const step = this.#core.decide(exchange);
      if (step instanceof Promise) step.then(this.#take.bind(this, exchange), this.#fail.bind(this, exchange));
      else this.#take(exchange, step);
    } catch (error) {
      this.#fail(exchange, error);
    }
  }

  #take(exchange: Exchange, step: GatewayStep): void {
    try {
      if (step.forward) this.#forward(exchange, step);
      else this.#answer(exchange, step.response, step.route);
    } catch (error) {
      this.#fail(exchange, error);
    }
  }

  /** What limiting threw (a store failure, failMode closed), or a fault of our own: one request's problem, never the others'. */
  #fail(exchange: Exchange, error: unknown): void {
    if (exchange.res.headersSent) exchange.res.destroy();
    else this.#answer(exchange, errorResponse(error), undefined);
  }

  #report(route: string | undefined, status: number): void {
    this.#core.observer?.gatewayRequest?.({ route: route ?? UNROUTED, status });
  }

  /** An answer of the gateway's own: small problem bodies, read whole and written at once. */
  #answer(exchange: Exchange, response: Response, route: string | undefined): void {
    this.#report(route, response.status);
    const { res } = exchange;
    if (res.destroyed) return;
    res.writeHead(response.status, flatFields(response.headers));
    if (!response.body) res.end();
    else response.arrayBuffer().then((body) => res.end(Buffer.from(body)), () => res.destroy());
  }

  #forward(exchange: Exchange, step: Forward): void {
    const { res } = exchange;
    const { lease } = step;
    if (res.destroyed) {
      // The client went away while its request was decided: the origin is not asked.
      void lease?.release();
      return this.#report(step.route, 499);
    }
    const timing = step.route !== undefined && this.#core.observer?.originDuration ? performance.now() : undefined;
    this.#ask(exchange, step, timing, this.#agent);
    // After #ask's own 'close' listener: a counted answer read on after its client left holds the lease until the origin is done (#readOn).
    if (lease) res.once("close", () => void (exchange.readingOn || lease.release()));
  }

  /**
   * One request to the origin: `agent` is the pool, or false for the one retry, on a new
   * connection, of a request that lost the race with the origin closing an idle pooled one
   * (lostIdleRace). Only a request without a body to resend (bodyless) is retried.
   */
  #ask(exchange: Exchange, step: Forward, timing: number | undefined, agent: http.Agent | false): void {
    const { req, res } = exchange;
    const core = this.#core;
    const { lease } = step;
    const origin = this.#originOptions;
    const outgoing = this.#client.request({
      hostname: origin.hostname,
      port: origin.port,
      protocol: origin.protocol,
      method: req.method,
      path: `${this.#basePath}${step.target.pathname}${step.target.search}`,
      headers: exchange.forwardedFields(),
      agent,
    });
    let answered = false;
    const bodyless = !forwardsBody(req);
    // originTimeoutMs: without an upload the origin owes every move from the start, so its
    // socket's idle timeout is the clock, for the answer's headers and then its body (no timer
    // of our own per request). With one, the wait for the headers pauses while the upload
    // waits on the client (OriginClock), and the body gets the socket's timeout (#relay).
    const clock = bodyless ? undefined : new OriginClock(step.timeoutMs, (error) => outgoing.destroy(error));
    if (bodyless) {
      outgoing.setTimeout(step.timeoutMs, () => {
        const error = new OriginTimeoutError(step.timeoutMs);
        // Before the headers the request fails (504); after them the answer is cut.
        if (incomingOf(outgoing)) incomingOf(outgoing)!.destroy(error);
        else outgoing.destroy(error);
      });
    }
    const originDone = () => {
      clock?.stop();
      if (timing !== undefined) core.observer!.originDuration!({ route: step.route!, durationMs: performance.now() - timing });
    };
    res.once("close", () => {
      if (res.writableFinished) return;
      // The client went away (or the answer was cut): nothing more to send. A counted answer
      // is still charged (answer-count.ts): its head, and a body cost's body, are read on.
      if (step.count && !exchange.charged) this.#readOn(exchange, step, outgoing);
      else outgoing.destroy();
    });
    outgoing.on("error", (error) => {
      if (answered) return; // a body cut after the headers is the answer stream's to report
      answered = true;
      if (agent && bodyless && !res.destroyed && RETRIABLE_METHODS.has(req.method!) && lostIdleRace(outgoing, error)) {
        return this.#ask(exchange, step, timing, false);
      }
      originDone();
      void lease?.release();
      // A client that went away reads no answer; do not report its abort as an origin fault.
      if (res.destroyed) return this.#report(step.route, 499);
      const origin = core.gateway.origin;
      this.#answer(exchange, error instanceof OriginTimeoutError ? gatewayTimeout(origin, error.timeoutMs) : badGateway(origin, error), step.route);
    });
    outgoing.on("response", (incoming) => {
      answered = true;
      originDone();
      this.#relay(exchange, step, incoming);
    });
    // A 101 to a request that did not ask to upgrade never comes as a 'response' (upgrade.ts).
    outgoing.on("upgrade", switchedUnasked);
    if (!clock) {
      outgoing.end();
      return;
    }
    // The upload streams as it comes, with backpressure; the clock runs only while the origin owes a move.
    clock.waitOnClient();
    req.on("data", (chunk: Buffer) => {
      clock.owe();
      if (outgoing.write(chunk)) clock.waitOnClient();
      else req.pause();
    });
    outgoing.on("drain", () => {
      clock.waitOnClient();
      req.resume();
    });
    req.once("end", () => {
      clock.owe();
      outgoing.end();
    });
    req.once("error", (error) => outgoing.destroy(error));
  }

  /**
   * The client of a counted request went away before its cost was known: the origin's answer
   * is read on for at most the route's maxReadMs (and maxReadBytes, counted by the tap), then
   * cut. Cut before its head, a cost the answer reports is charged `missing` (abandoned).
   */
  #readOn(exchange: Exchange, step: Forward, outgoing: http.ClientRequest): void {
    const count = step.count!;
    const reading = exchange.reading;
    if (outgoing.closed) return; // the origin's answer is all read already
    // Its usage already found: nothing more to read, the debit lands now (the tap ends on close).
    if (reading?.done) return void outgoing.destroy();
    // The origin works on: a concurrency lease is held until it is done.
    exchange.readingOn = true;
    if (reading) {
      const incoming = incomingOf(outgoing);
      reading.clientGone();
      // Unpiped now, the body flows on into the tap alone (a pipe would pause it).
      incoming?.unpipe(exchange.res);
      incoming?.resume();
    }
    const timer = setTimeout(() => {
      if (exchange.reading) exchange.reading.cut(`maxReadMs (${count.limits.ms})`);
      else if (!exchange.charged) count.abandoned(quietly);
      outgoing.destroy();
    }, count.limits.ms);
    timer.unref();
    outgoing.once("close", () => {
      clearTimeout(timer);
      void step.lease?.release();
    });
  }

  /** Streams the origin's answer to the client, the core's fields added. */
  #relay(exchange: Exchange, step: Forward, incoming: IncomingMessage): void {
    const { res } = exchange;
    const status = incoming.statusCode ?? 0;
    // A 101 comes as an upgrade (switchedUnasked); any other status out of range is a broken origin.
    if (status < 200 || status > 599) {
      incoming.destroy();
      void step.lease?.release();
      this.#answer(exchange, badGateway(this.#core.gateway.origin, new UnrelayableStatusError(status)), step.route);
      return;
    }
    const raw = incoming.rawHeaders;
    this.#core.originAnswered(step, status, () => rawField(raw, "retry-after") ?? null, quietly);
    const counted = step.count?.answered(status, (name) => rawField(raw, name) ?? null, quietly, "raw", NODE_TAP_DECODINGS);
    // Charged at the head (a status, a header's cost), or by the tap the body goes through.
    exchange.charged = counted !== undefined && counted.tap === undefined;
    if (counted?.extra instanceof Promise) {
      // The head waits for its debit (answer-count.ts); a body cut meanwhile cuts the answer.
      incoming.once("error", () => res.destroy());
      counted.extra.then((extra) => this.#send(exchange, step, incoming, extra, counted.tap), () => res.destroy());
    } else this.#send(exchange, step, incoming, counted ? (counted.extra as Record<string, string>) : step.extra, counted?.tap);
  }

  /** Writes the answer's head, the core's fields added, and streams its body (through a counted route's tap). */
  #send(exchange: Exchange, step: Forward, incoming: IncomingMessage, extra: Record<string, string>, tap: BodyTap | undefined): void {
    const { req, res } = exchange;
    const status = incoming.statusCode!;
    const origin = originFields(incoming.rawHeaders);
    const fields = origin instanceof Headers ? answerHeaders(origin, extra) : addExtraFields(origin, extra);
    this.#report(step.route, status);
    if (res.destroyed) {
      if (!tap) return void incoming.destroy();
      // The client left before the head went out: the body is read for the tap alone (#readOn's bounds).
      tap.clientGone();
      return this.#tapBody(exchange, incoming, tap);
    }
    res.writeHead(status, incoming.statusMessage, fields instanceof Headers ? flatFields(fields) : fields);
    if (req.method === "HEAD" || NULL_BODY_STATUSES.has(status)) {
      tap?.end();
      incoming.resume();
      res.end();
      return;
    }
    // The body's idle timeout (originTimeoutMs) is the socket's: no timer per chunk. Without an
    // upload it has been running since the request went out (#ask).
    if (forwardsBody(req)) incoming.setTimeout(step.timeoutMs, () => incoming.destroy(new OriginTimeoutError(step.timeoutMs)));
    // A body cut mid-way (origin error, idle timeout) cuts the client's answer: it must not look whole.
    incoming.once("error", () => res.destroy());
    incoming.pipe(res);
    // Beside the pipe, not in it: the reader sees each chunk as it goes out, and holds none back.
    if (tap) this.#tapBody(exchange, incoming, tap);
  }

  /** Feeds the body to a counted answer's tap (decoded for it); once the client has gone, stops reading when the tap is done. */
  #tapBody(exchange: Exchange, incoming: IncomingMessage, tap: BodyTap): void {
    const reading = decodingTap(tap);
    exchange.reading = reading;
    const clientGone = () => exchange.res.destroyed;
    incoming.on("data", (chunk: Buffer) => {
      reading.push(chunk);
      // Read on the tap's account only: no more once it is done (usage found, a bound reached).
      if (reading.done && clientGone()) incoming.destroy();
    });
    incoming.once("end", () => reading.end());
    incoming.once("close", () => reading.end());
    if (clientGone()) incoming.resume();
  }
}

/**
 * An origin's 101 to a plain request: node:http hands it over as an upgrade, never as a
 * 'response', and without this listener would drop the socket and leave the request waiting
 * forever. The origin's socket is closed, and the request fails as an unreachable origin
 * does (a 502, the lease released), with the reason. One shared function: no cost per request.
 */
export function switchedUnasked(this: http.ClientRequest, incoming: IncomingMessage, originSocket: Duplex): void {
  originSocket.destroy();
  this.emit("error", new UnrelayableStatusError(incoming.statusCode ?? 101));
}

/**
 * Whether the request's body goes to the origin: a GET's or HEAD's never does, nor an
 * OPTIONS's without one (neither Content-Length nor Transfer-Encoding: RFC 9112, 6.3).
 */
function forwardsBody(req: IncomingMessage): boolean {
  const method = req.method!;
  if (method === "GET" || method === "HEAD") return false;
  if (method !== "OPTIONS") return true;
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && Number(length) !== 0);
}

/** The origin's answer once its headers came (ClientRequest keeps it as `res`). */
const incomingOf = (outgoing: http.ClientRequest): IncomingMessage | undefined => (outgoing as { res?: IncomingMessage }).res;

/** One request and its answer, and the core's facts about it (NodeRequestFacts). */
class Exchange extends NodeRequestFacts {
  readonly res: ServerResponse;
  /** A counted answer whose cost is settled: nothing more to read for it once the client has gone. */
  charged = false;
  /** The tap a counted body's cost is read by, once the body flows. */
  reading: BodyTap | undefined;
  /** The client has gone and the origin's answer is read on (#readOn): the lease waits for the origin. */
  readingOn = false;

  constructor(req: IncomingMessage, res: ServerResponse, path: CanonicalPath) {
    super(req, path);
    this.res = res;
  }

  /** Both Transfer-Encoding and Content-Length, in one pass over the fields. */
  framedTwice(): boolean {
    const raw = this.req.rawHeaders;
    let chunked = false;
    let sized = false;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i]!;
      if (name.length === 17 && name.toLowerCase() === "transfer-encoding") chunked = true;
      else if (name.length === 14 && name.toLowerCase() === "content-length") sized = true;
    }
    return chunked && sized;
  }

  protected watchGone(gone: () => void): void {
    this.res.once("close", () => {
      if (!this.res.writableFinished) gone();
    });
  }

  /** The client's fields for the origin, without Host (the origin client sets it). */
  forwardedFields(): Record<string, string> {
    return endToEndFields(this.req.rawHeaders, true)!;
  }
}
