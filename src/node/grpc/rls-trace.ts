// Traces of Envoy's rate limit calls (src/observe/trace.ts): one server span per ShouldRateLimit, its parent from the call's metadata.
import type * as grpc from "@grpc/grpc-js";
import type { WireRequest } from "../../rls/request.js";
import type { RlsAnswer } from "../../rls/service.js";
import { type SpillwayTracer, TRACE_ATTRIBUTES as A, type TraceCarrier } from "../../observe/trace.js";

export const RLS_SPAN_NAME = "envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

const firstText = (metadata: grpc.Metadata, name: string): string | undefined => {
  const value = metadata.get(name)[0];
  return value === undefined ? undefined : String(value);
};

/** The caller's W3C trace context, from its metadata (Envoy sends traceparent when it traces). */
function carrierOf(metadata: grpc.Metadata): TraceCarrier | undefined {
  const traceparent = firstText(metadata, "traceparent");
  return traceparent === undefined ? undefined : { traceparent, tracestate: firstText(metadata, "tracestate") };
}

/**
 * The descriptors' keys, each descriptor's entries joined by `.`, descriptors by `,`
 * (`generic_key.header_match,remote_address`): which rules were asked, never a value.
 */
function descriptorKeys(request: WireRequest): string {
  const keys: string[] = [];
  for (const descriptor of request.descriptors ?? []) keys.push((descriptor.entries ?? []).map((entry) => entry.key ?? "").join("."));
  return keys.join(",");
}

/**
 * Runs one ShouldRateLimit call inside its span: the domain, the descriptor keys, the overall
 * code (or the gRPC status of a failure). `handle` answers through the callback it is given.
 */
export function traceRlsCall<Request>(
  tracer: SpillwayTracer,
  call: grpc.ServerUnaryCall<Request, RlsAnswer>,
  callback: grpc.sendUnaryData<RlsAnswer>,
  wire: WireRequest | undefined,
  handle: (callback: grpc.sendUnaryData<RlsAnswer>) => void,
): void {
  const span = tracer.startRequest(RLS_SPAN_NAME, carrierOf(call.metadata));
  span.setAttribute("rpc.system", "grpc");
  span.setAttribute("rpc.service", "envoy.service.ratelimit.v3.RateLimitService");
  span.setAttribute("rpc.method", "ShouldRateLimit");
  if (wire) {
    span.setAttribute(A.domain, wire.domain ?? "");
    span.setAttribute(A.descriptorKeys, descriptorKeys(wire));
  }
  const traced: grpc.sendUnaryData<RlsAnswer> = (error, answer) => {
    if (error) {
      span.setAttribute(A.rpcCode, error.code ?? 2);
      tracer.fail(span, error.details ?? (error as { message?: string }).message ?? "failed");
    } else {
      span.setAttribute(A.rpcCode, 0);
      if (answer) span.setAttribute(A.overallCode, answer.overall_code);
    }
    span.end();
    callback(error, answer);
  };
  tracer.within(span, () => handle(traced));
}
