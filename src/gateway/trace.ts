// What the gateway decided, written on the request's span (src/observe/trace.ts), on every runtime.
import { TRACE_ATTRIBUTES as A, type TraceSpan } from "../observe/trace.js";
import type { GatewayCore, GatewayStep } from "./core.js";
import { describeKeySource } from "./keys.js";

/** What the gateway decided, on its span: the route, its policies and key source (never the key). */
export function annotateStep(span: TraceSpan, core: GatewayCore, step: GatewayStep): void {
  if (step.route === undefined) {
    span.setAttribute(A.route, "unrouted");
    return;
  }
  span.setAttribute(A.route, step.route);
  const route = core.gateway.routes[Number(step.route)];
  if (!route) return;
  span.setAttribute(A.policies, route.policies.map((policy) => policy.name).join(","));
  span.setAttribute(A.keySource, describeKeySource(route.key));
  // Answered here without a store decision (a missing key, a deny list, a pause): the outcome is the answer.
  if (!step.forward && step.response.status !== 429) span.setAttribute(A.outcome, `refused_${step.response.status}`);
}

