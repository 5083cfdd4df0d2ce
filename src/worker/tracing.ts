// Traces on Cloudflare Workers: spans through the tracer the runtime provides (Workers tracing's
// custom spans, `tracing` of cloudflare:workers), none when it provides none. No SDK is bundled.
import * as workers from "cloudflare:workers";
import { apiRouteOf } from "../http/api.js";
import { type SpillwayTracer, TRACE_ATTRIBUTES, type TraceSpan } from "../observe/trace.js";

/** What Spillway uses of the runtime's `tracing` (workerd's custom spans). */
export interface RuntimeTracing {
  /** A span active while `run` runs, ended when it returns or its promise settles. */
  enterSpan<T>(name: string, run: (span: RuntimeSpan) => T): T;
  /** A span nested under the active one, not made active; the caller ends it. */
  startSpan(name: string): RuntimeSpan;
  /** The active span: a custom one, else the invocation's. */
  getActiveSpan(): RuntimeSpan | undefined;
}

export interface RuntimeSpan extends TraceSpan {
  /** Whether this request is sampled: an unsampled one is not traced by Spillway either. */
  readonly isTraced?: boolean;
  setStatus?(status: { code: "unset" | "ok" | "error"; message?: string }): unknown;
}

/** The runtime's tracer, and how a request enters its span. */
export interface WorkerTracer extends SpillwayTracer {
  /** Whether the request in hand is traced at all (Workers tracing on, and this request sampled). */
  sampled(): boolean;
  enter<T>(name: string, run: (span: TraceSpan) => Promise<T>): Promise<T>;
}

/**
 * The runtime's tracer as a SpillwayTracer, or undefined when this runtime has none (an older
 * workerd, or another runtime). A request's parent is the runtime's: the invocation span, which
 * the platform ties to the incoming trace context itself; a subrequest to the origin is traced and
 * propagated by the platform's fetch instrumentation (childContext: undefined).
 */
export function workerTracer(tracing: RuntimeTracing | undefined = (workers as { tracing?: RuntimeTracing }).tracing): WorkerTracer | undefined {
  if (!tracing || typeof tracing.enterSpan !== "function" || typeof tracing.startSpan !== "function" || typeof tracing.getActiveSpan !== "function") return undefined;
  const active = () => {
    const span = tracing.getActiveSpan();
    return span?.isTraced === false ? undefined : span;
  };
  return {
    sampled: () => active() !== undefined,
    enter: (name, run) => tracing.enterSpan(name, run),
    startRequest: (name) => tracing.startSpan(name),
    // The runtime's spans nest by its own async context: what enterSpan made active stays so.
    within: (_span, run) => run(),
    active,
    startChild: (name) => tracing.startSpan(name),
    fail: (span, message) => void (span as RuntimeSpan).setStatus?.({ code: "error", message }),
    childContext: () => undefined,
  };
}

/**
 * One request of the Worker's fetch handler inside its span: `spillway.api /v1/…` for the API
 * (an unknown /v1 path is named /v1/*: a path may carry what a client typed), else
 * `spillway.gateway`. The span ends with the answer's head (its body streams on). For a request
 * the runtime samples (`tracer.sampled()`): the caller asks first.
 */
export function tracedFetch(tracer: WorkerTracer, request: Request, run: () => Promise<Response>): Promise<Response> {
  const path = new URL(request.url).pathname;
  const api = path.startsWith("/v1/") ? (apiRouteOf(path) ? path : "/v1/*") : undefined;
  return tracer.enter(api ? `spillway.api ${api}` : "spillway.gateway", async (span) => {
    span.setAttribute(TRACE_ATTRIBUTES.method, request.method);
    if (api) span.setAttribute(TRACE_ATTRIBUTES.httpRoute, api);
    try {
      const response = await run();
      span.setAttribute(TRACE_ATTRIBUTES.status, response.status);
      if (response.status >= 500) tracer.fail(span, `answered ${response.status}`);
      return response;
    } catch (error) {
      tracer.fail(span, (error as Error).message);
      throw error;
    }
  });
}
