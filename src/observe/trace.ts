/**
 * Traces, runtime-neutral: what the edges and the traced limiter ask of a tracer, whatever
 * backs it (OpenTelemetry's SDK on Node, src/node/tracing/; a Worker's `ctx.tracing`,
 * src/worker/tracing.ts). Off by default: with no tracer installed every edge reads one
 * undefined field per request and allocates nothing for tracing.
 *
 * What a span may carry: route labels, policy names, outcomes, store kinds, durations, key
 * SOURCES (`the x-api-key header`). Never a key or a descriptor value: they may be credentials
 * or personal data.
 */

/** A span as Spillway writes it: OpenTelemetry's Span and a Worker's tracing Span both fit. */
export interface TraceSpan {
  setAttribute(key: string, value: string | number | boolean): unknown;
  end(): void;
}

/** The W3C trace context a request came with (`traceparent`, `tracestate`), as sent. */
export interface TraceCarrier {
  traceparent?: string | undefined;
  tracestate?: string | undefined;
}

export interface SpillwayTracer {
  /**
   * A server span for one request: its parent is `parent`'s trace context where the runtime
   * takes it from us (Node), else the runtime's own (a Worker's invocation span).
   */
  startRequest(name: string, parent: TraceCarrier | undefined): TraceSpan;
  /** Runs `run` with `span` active: store spans started inside nest under it (across awaits). */
  within<T>(span: TraceSpan, run: () => T): T;
  /** The active request span, if any (the traced limiter annotates it). */
  active(): TraceSpan | undefined;
  /** A child span of the active one (a store call), or undefined outside any request span. */
  startChild(name: string): TraceSpan | undefined;
  /** Marks a span failed, with a message (never a key). */
  fail(span: TraceSpan, message: string): void;
  /**
   * The trace context to pass on (to the origin): a traceparent whose parent is `span`, and the
   * tracestate it came with; undefined when the runtime propagates its own.
   */
  childContext(span: TraceSpan): TraceCarrier | undefined;
}

let installed: SpillwayTracer | undefined;

/**
 * Installs the process's tracer (spillway serve and spillway rls, at start, before anything is
 * built from the config), or removes it (undefined). Edges read it when they are built.
 */
export function installTracer(tracer: SpillwayTracer | undefined): void {
  installed = tracer;
}

/** The installed tracer; undefined when tracing is off. */
export function currentTracer(): SpillwayTracer | undefined {
  return installed;
}

/** Attribute names, one spelling everywhere (docs/observability.md, "Traces", lists them). */
export const TRACE_ATTRIBUTES = {
  route: "spillway.route",
  policies: "spillway.policies",
  outcome: "spillway.outcome",
  store: "spillway.store",
  storeDurationMs: "spillway.store.duration_ms",
  keySource: "spillway.key.source",
  status: "http.response.status_code",
  method: "http.request.method",
  httpRoute: "http.route",
  operation: "spillway.store.operation",
  domain: "ratelimit.domain",
  descriptorKeys: "ratelimit.descriptor_keys",
  overallCode: "ratelimit.overall_code",
  rpcCode: "rpc.grpc.status_code",
} as const;
