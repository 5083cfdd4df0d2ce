// Traces on the node:http edges (src/observe/trace.ts): a request's span, its parent read from the client's fields, ended when the answer is done.
import type { IncomingMessage, ServerResponse } from "node:http";
import { type SpillwayTracer, TRACE_ATTRIBUTES as A, type TraceCarrier, type TraceSpan } from "../../observe/trace.js";
import { rawField } from "./raw-fields.js";

/** The client's W3C trace context, from its fields as sent. */
export function carrierOf(req: IncomingMessage): TraceCarrier | undefined {
  const traceparent = rawField(req.rawHeaders, "traceparent");
  if (traceparent === undefined) return undefined;
  return { traceparent, tracestate: rawField(req.rawHeaders, "tracestate") };
}

/**
 * Starts a request's server span and ends it when the answer is written or cut, with its
 * status. `run` goes on with the span active (the store calls it makes nest under it).
 */
export function traceRequest(tracer: SpillwayTracer, name: string, req: IncomingMessage, res: ServerResponse, run: (span: TraceSpan) => void): void {
  const span = tracer.startRequest(name, carrierOf(req));
  span.setAttribute(A.method, req.method ?? "");
  res.once("close", () => {
    span.setAttribute(A.status, res.statusCode);
    if (!res.writableFinished) tracer.fail(span, "the answer was cut before its end");
    else if (res.statusCode >= 500) tracer.fail(span, `answered ${res.statusCode}`);
    span.end();
  });
  tracer.within(span, () => run(span));
}

/** The origin's fields with the trace context passed on: a traceparent whose parent is the gateway's span. */
export function withChildContext(tracer: SpillwayTracer, span: TraceSpan, fields: Record<string, string>): Record<string, string> {
  const child = tracer.childContext(span);
  if (!child) return fields;
  fields.traceparent = child.traceparent!;
  if (child.tracestate) fields.tracestate = child.tracestate;
  else delete fields.tracestate;
  return fields;
}
