// The gateway edge's answer half on node:http: its own answers, the origin's answer relayed (through a counted route's tap), and an answer read on after its client left.
import type http from "node:http";
import type { IncomingMessage } from "node:http";
import type { GatewayCore } from "../../gateway/core.js";
import { UNROUTED } from "../../gateway/core.js";
import { OriginTimeoutError } from "../../gateway/origin-timeout.js";
import { UnrelayableStatusError } from "../../gateway/upgrade.js";
import { NULL_BODY_STATUSES, addExtraFields, answerHeaders, badGateway } from "../../gateway/proxy.js";
import type { BodyTap } from "../../gateway/answer-count.js";
import { NODE_TAP_DECODINGS, decodingTap } from "./usage-decode.js";
import { rawField } from "./raw-fields.js";
import { flatFields, originFields } from "./message-fields.js";
import { quietly } from "./request-facts.js";
import { type Exchange, type Forward, forwardsBody, incomingOf } from "./gateway-exchange.js";

/** What the gateway edge writes to its clients, one per edge (NodeGatewayEdge is the request half). */
export class GatewayAnswers {
  readonly #core: GatewayCore;

  constructor(core: GatewayCore) {
    this.#core = core;
  }

  report(route: string | undefined, status: number): void {
    this.#core.observer?.gatewayRequest?.({ route: route ?? UNROUTED, status });
  }

  /** An answer of the gateway's own: small problem bodies, read whole and written at once. */
  answer(exchange: Exchange, response: Response, route: string | undefined): void {
    this.report(route, response.status);
    const { res } = exchange;
    if (res.destroyed) return;
    res.writeHead(response.status, flatFields(response.headers));
    if (!response.body) res.end();
    else response.arrayBuffer().then((body) => res.end(Buffer.from(body)), () => res.destroy());
  }

  /**
   * The client of a counted request went away before its cost was known: the origin's answer
   * is read on for at most the route's maxReadMs (and maxReadBytes, counted by the tap), then
   * cut. Cut before its head, a cost the answer reports is charged `missing` (abandoned).
   */
  readOn(exchange: Exchange, step: Forward, outgoing: http.ClientRequest): void {
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
  relay(exchange: Exchange, step: Forward, incoming: IncomingMessage): void {
    const { res } = exchange;
    const status = incoming.statusCode ?? 0;
    // A 101 comes as an upgrade (switchedUnasked); any other status out of range is a broken origin.
    if (status < 200 || status > 599) {
      incoming.destroy();
      void step.lease?.release();
      this.answer(exchange, badGateway(this.#core.gateway.origin, new UnrelayableStatusError(status)), step.route);
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
    this.report(step.route, status);
    if (res.destroyed) {
      if (!tap) return void incoming.destroy();
      // The client left before the head went out: the body is read for the tap alone (readOn's bounds).
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
    // upload it has been running since the request went out (NodeGatewayEdge's #ask).
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
