// The gateway edge's request half on node:http: each request decided by the core, then forwarded to the origin (the answer half is gateway-answer.ts).
import http, { type IncomingMessage, type ServerResponse } from "node:http";
import https from "node:https";
import { urlToHttpOptions } from "node:url";
import type { GatewayCore, GatewayStep } from "../../gateway/core.js";
import { refusal } from "../../gateway/core.js";
import { OriginClock, OriginTimeoutError, gatewayTimeout } from "../../gateway/origin-timeout.js";
import { badGateway, originBasePath } from "../../gateway/proxy.js";
import type { CanonicalPath } from "../../http/path.js";
import { errorResponse } from "../../http/problems.js";
import { type OriginAgents, RETRIABLE_METHODS, lostIdleRace, originAgents } from "./origin-agents.js";
import { TurnQueue } from "./turn-queue.js";
import { Exchange, type Forward, forwardsBody, incomingOf, switchedUnasked } from "./gateway-exchange.js";
import { GatewayAnswers } from "./gateway-answer.js";
import { currentTracer, type SpillwayTracer } from "../../observe/trace.js";
import { traceRequest, withChildContext } from "./request-trace.js";
import { annotateStep } from "../../gateway/trace.js";

export { switchedUnasked } from "./gateway-exchange.js";

/**
 * The gateway's Node edge: node:http in, node:http out, around the same GatewayCore the
 * Worker runs. @hono/node-server would turn every request and answer into a web Request and
 * Response and every body into a web stream, which costs more than the proxying itself; here
 * bytes go from socket to socket (pipe, with backpressure) and headers stay records.
 * Only what the core answers itself (400, 403, 429, 5xx problems) is a Response.
 *
 * With a store in this process (the memory store), a turn's requests are decided and forwarded
 * together at its end (TurnQueue), which costs less CPU per request (bench:gateway). With Redis
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
  /** The answer half: what is written to the client. */
  readonly #answers: GatewayAnswers;
  /** Set when tracing is on (src/observe/trace.ts): read once here, not per request. */
  readonly #tracer: SpillwayTracer | undefined = currentTracer();

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
    this.#answers = new GatewayAnswers(core);
    this.#turn = core.limiter.kind === "memory" ? new TurnQueue((exchange) => this.#start(exchange)) : undefined;
  }

  /** Serves one request whose canonical path the server already computed (and found not Spillway's). */
  handle(req: IncomingMessage, res: ServerResponse, path: CanonicalPath): void {
    const exchange = new Exchange(req, res, path);
    if (this.#turn) this.#turn.push(exchange);
    else this.#start(exchange);
  }

  #start(exchange: Exchange): void {
    const tracer = this.#tracer;
    if (!tracer) return this.#decide(exchange);
    traceRequest(tracer, "spillway.gateway", exchange.req, exchange.res, (span) => {
      exchange.span = span;
      this.#decide(exchange);
    });
  }

  #decide(exchange: Exchange): void {
    try {
      // Request smuggling: a message framed two ways is refused (Node's parser already does so).
      if (exchange.framedTwice()) return this.#answers.answer(exchange, refusal(true, exchange.path), undefined);
      const step = this.#core.decide(exchange);
      if (step instanceof Promise) step.then(this.#take.bind(this, exchange), this.#fail.bind(this, exchange));
      else this.#take(exchange, step);
    } catch (error) {
      this.#fail(exchange, error);
    }
  }

  #take(exchange: Exchange, step: GatewayStep): void {
    if (exchange.span) annotateStep(exchange.span, this.#core, step);
    try {
      if (step.forward) this.#forward(exchange, step);
      else {
        exchange.dropBody();
        this.#answers.answer(exchange, step.response, step.route);
      }
    } catch (error) {
      this.#fail(exchange, error);
    }
  }

  /** What limiting threw (a store failure, failMode closed), or a fault of our own: one request's problem, never the others'. */
  #fail(exchange: Exchange, error: unknown): void {
    if (exchange.res.headersSent) exchange.res.destroy();
    else this.#answers.answer(exchange, errorResponse(error), undefined);
  }


  #forward(exchange: Exchange, step: Forward): void {
    const { res } = exchange;
    const { lease } = step;
    if (res.destroyed) {
      // The client went away while its request was decided: the origin is not asked.
      void lease?.release();
      return this.#answers.report(step.route, 499);
    }
    const timing = step.route !== undefined && this.#core.observer?.originDuration ? performance.now() : undefined;
    this.#ask(exchange, step, timing, this.#agent);
    // After #ask's own 'close' listener: a counted answer read on after its client left holds the lease until the origin is done (GatewayAnswers.readOn).
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
      headers: exchange.span ? withChildContext(this.#tracer!, exchange.span, exchange.forwardedFields()) : exchange.forwardedFields(),
      agent,
    });
    let answered = false;
    const bodyless = !forwardsBody(req);
    // originTimeoutMs: without an upload the origin owes every move from the start, so its
    // socket's idle timeout is the clock, for the answer's headers and then its body (no timer
    // of our own per request). With one, the wait for the headers pauses while the upload
    // waits on the client (OriginClock), and the body gets the socket's timeout (GatewayAnswers.relay).
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
      if (step.count && !exchange.charged) this.#answers.readOn(exchange, step, outgoing);
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
      if (res.destroyed) return this.#answers.report(step.route, 499);
      const origin = core.gateway.origin;
      this.#answers.answer(exchange, error instanceof OriginTimeoutError ? gatewayTimeout(origin, error.timeoutMs) : badGateway(origin, error), step.route);
    });
    outgoing.on("response", (incoming) => {
      answered = true;
      originDone();
      this.#answers.relay(exchange, step, incoming);
    });
    // A 101 to a request that did not ask to upgrade never comes as a 'response' (upgrade.ts).
    outgoing.on("upgrade", switchedUnasked);
    if (!clock) {
      outgoing.end();
      return;
    }
    // The upload streams as it comes, with backpressure; the clock runs only while the origin owes a move.
    // A prefix read for the body's fields (Exchange.readBody) goes first, as it came.
    const held = exchange.takeHeld();
    let flowing = true;
    if (held) for (const chunk of held) flowing = outgoing.write(chunk);
    if (held && exchange.bodyEnded) {
      clock.owe();
      outgoing.end();
      return;
    }
    if (flowing) clock.waitOnClient();
    else clock.owe();
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
    // readBody paused the upload at its limit; it goes on once the origin can take more.
    if (held && flowing) req.resume();
  }
}
