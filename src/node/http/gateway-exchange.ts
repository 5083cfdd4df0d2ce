// One gateway request on node:http and its answer (Exchange), and the facts about it both halves of the edge read.
import type http from "node:http";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Duplex } from "node:stream";
import type { GatewayStep } from "../../gateway/core.js";
import { UnrelayableStatusError } from "../../gateway/upgrade.js";
import type { BodyTap } from "../../gateway/answer-count.js";
import type { CanonicalPath } from "../../http/path.js";
import { type BodyFields, BodyFieldsReader, type BodyRead, noBodyFields } from "../../gateway/body-fields.js";
import { endToEndFields } from "./message-fields.js";
import { rawField } from "./raw-fields.js";
import { NodeRequestFacts } from "./request-facts.js";
import type { TraceSpan } from "../../observe/trace.js";

/** A step the core forwards to the origin. */
export type Forward = GatewayStep & { forward: true };

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
export function forwardsBody(req: IncomingMessage): boolean {
  const method = req.method!;
  if (method === "GET" || method === "HEAD") return false;
  if (method !== "OPTIONS") return true;
  const length = req.headers["content-length"];
  return req.headers["transfer-encoding"] !== undefined || (length !== undefined && Number(length) !== 0);
}

/** The origin's answer once its headers came (ClientRequest keeps it as `res`). */
export const incomingOf = (outgoing: http.ClientRequest): IncomingMessage | undefined => (outgoing as { res?: IncomingMessage }).res;

/** One request and its answer, and the core's facts about it (NodeRequestFacts). */
export class Exchange extends NodeRequestFacts {
  readonly res: ServerResponse;
  /** A counted answer whose cost is settled: nothing more to read for it once the client has gone. */
  charged = false;
  /** The tap a counted body's cost is read by, once the body flows. */
  reading: BodyTap | undefined;
  /** The client has gone and the origin's answer is read on (GatewayAnswers.readOn): the lease waits for the origin. */
  readingOn = false;
  /** This request's span, when tracing is on (request-trace.ts). */
  span: TraceSpan | undefined = undefined;

  /** The body's first chunks, read for its fields (readBody) and held for the origin; undefined: none read. */
  held: Buffer[] | undefined;
  /** The body ended while its fields were read: the held chunks are the whole of it. */
  bodyEnded = false;

  constructor(req: IncomingMessage, res: ServerResponse, path: CanonicalPath) {
    super(req, path);
    this.res = res;
  }

  /**
   * Reads the body's fields (body-fields.ts) from its first chunks, holding them: until the body
   * ends or passes the route's limit, when the upload is paused for the origin to take the rest
   * (the edge writes the held chunks first). Never rejects: an upload that breaks off has no fields.
   */
  readBody(read: BodyRead): Promise<BodyFields> {
    const req = this.req;
    if (!forwardsBody(req)) return Promise.resolve(noBodyFields("the request has no body"));
    const reader = new BodyFieldsReader(read, rawField(req.rawHeaders, "content-encoding"));
    const held: Buffer[] = (this.held = []);
    return new Promise((resolve) => {
      const done = (ended: boolean) => {
        // Paused before the listener goes: a stream left flowing without one would drop chunks.
        if (!ended) req.pause();
        req.off("data", onData).off("end", onEnd).off("close", onClose);
        this.bodyEnded = ended;
        resolve(reader.finish(ended));
      };
      const onData = (chunk: Buffer) => {
        held.push(chunk);
        if (!reader.push(chunk)) done(false);
      };
      const onEnd = () => done(true);
      const onClose = () => done(false);
      req.on("data", onData).once("end", onEnd).once("close", onClose);
    });
  }

  /** The held chunks, handed over once (the origin request writes them before the rest). */
  takeHeld(): Buffer[] | undefined {
    const held = this.held;
    this.held = undefined;
    return held;
  }

  /** A request refused after its body was partly read: the rest is read and dropped, so the connection can serve its next request. */
  dropBody(): void {
    if (this.held !== undefined && !this.bodyEnded) this.req.resume();
    this.held = undefined;
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
