// The OpenTelemetry SDK behind Spillway's tracer on Node. Its packages are optional peers
// (src/node/cli/optional-packages.ts): this module is imported only when tracing is on.
import { AsyncLocalStorage } from "node:async_hooks";
import { type Context, ROOT_CONTEXT, type Span, SpanKind, SpanStatusCode, type TextMapGetter, trace } from "@opentelemetry/api";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { OTLPTraceExporter as JsonExporter } from "@opentelemetry/exporter-trace-otlp-http";
import { OTLPTraceExporter as ProtobufExporter } from "@opentelemetry/exporter-trace-otlp-proto";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AlwaysOffSampler, AlwaysOnSampler, BasicTracerProvider, BatchSpanProcessor, ParentBasedSampler, type Sampler, TraceIdRatioBasedSampler } from "@opentelemetry/sdk-trace-base";
import type { SpillwayTracer, TraceCarrier, TraceSpan } from "../../observe/trace.js";
import type { SamplerSettings, TraceSettings } from "./settings.js";

/** Tracing while it runs: the tracer the edges use, and the flush at shutdown. */
export interface RunningTracing {
  tracer: SpillwayTracer;
  settings: TraceSettings;
  /** Exports what is buffered and stops (spillway serve and rls call it after their servers closed). */
  shutdown(): Promise<void>;
}

const CARRIER_GETTER: TextMapGetter<TraceCarrier> = {
  get: (carrier, key) => (key === "traceparent" ? carrier.traceparent : key === "tracestate" ? carrier.tracestate : undefined),
  keys: () => ["traceparent", "tracestate"],
};

function samplerOf({ ratio, parentBased }: SamplerSettings): Sampler {
  const root = ratio >= 1 ? new AlwaysOnSampler() : ratio <= 0 ? new AlwaysOffSampler() : new TraceIdRatioBasedSampler(ratio);
  return parentBased ? new ParentBasedSampler({ root }) : root;
}

/**
 * The SDK's tracer as a SpillwayTracer: spans batched (OTEL_BSP_* as the SDK reads them) to
 * OTLP/HTTP in protobuf or JSON; a request's parent from its W3C traceparent and tracestate;
 * the span active across a request's awaits held in an AsyncLocalStorage of our own (no global
 * context manager is registered, so nothing else in the process is changed).
 */
export function startOtelTracing(settings: TraceSettings): RunningTracing {
  const exporter = settings.encoding === "json" ? new JsonExporter({ url: settings.url }) : new ProtobufExporter({ url: settings.url });
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ "service.name": settings.serviceName, ...settings.resource }),
    sampler: samplerOf(settings.sampler),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer("spillway");
  const propagator = new W3CTraceContextPropagator();
  const active = new AsyncLocalStorage<Span>();
  const parentOf = (span: TraceSpan): Context => trace.setSpan(ROOT_CONTEXT, span as Span);

  const spillwayTracer: SpillwayTracer = {
    startRequest(name, parent) {
      const context = parent?.traceparent ? propagator.extract(ROOT_CONTEXT, parent, CARRIER_GETTER) : ROOT_CONTEXT;
      return tracer.startSpan(name, { kind: SpanKind.SERVER }, context);
    },
    // A span the sampler dropped records nothing: no store spans under it, no context to carry.
    within: (span, run) => ((span as Span).isRecording() ? active.run(span as Span, run) : run()),
    active: () => active.getStore(),
    startChild(name) {
      const parent = active.getStore();
      return parent ? tracer.startSpan(name, { kind: SpanKind.CLIENT }, parentOf(parent)) : undefined;
    },
    fail(span, message) {
      (span as Span).setStatus({ code: SpanStatusCode.ERROR, message });
    },
    childContext(span) {
      const { traceId, spanId, traceFlags, traceState } = (span as Span).spanContext();
      const traceparent = `00-${traceId}-${spanId}-${traceFlags & 1 ? "01" : "00"}`;
      const tracestate = traceState?.serialize();
      return tracestate ? { traceparent, tracestate } : { traceparent };
    },
  };
  return { tracer: spillwayTracer, settings, shutdown: () => provider.shutdown() };
}
