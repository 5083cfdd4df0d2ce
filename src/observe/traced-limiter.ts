import type { AcquireOptions, AcquireResult, CheckOptions, DebitCost, Decision, Policy } from "../core/types.js";
import { ForwardingLimiter, type Limiter } from "../core/limiter.js";
import { type SpillwayTracer, TRACE_ATTRIBUTES as A, type TraceSpan } from "./trace.js";

/** The names of a stack, as one attribute value (a Worker's spans take scalars only). */
const namesOf = (policies: readonly Policy[]) => (policies.length === 1 ? policies[0]!.name : policies.map((policy) => policy.name).join(","));

/**
 * A Limiter whose store calls are spans (`spillway.store check`, …), children of the request
 * span active when the call is made, which it also annotates: the store, its latency, the
 * stack's names and the decision's outcome. The key is never written to a span. Outside any
 * request span (a background debit) a call runs untraced.
 */
export class TracedLimiter extends ForwardingLimiter {
  readonly #tracer: SpillwayTracer;
  readonly debitNow?: (key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number) => Decision;
  readonly debitLater?: (key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number) => Promise<Decision>;

  constructor(store: Limiter, tracer: SpillwayTracer) {
    super(store);
    this.#tracer = tracer;
    // In-process answers stay in-process (the gateway's fast path): forwarded, untraced.
    if (store.debitNow) this.debitNow = store.debitNow.bind(store);
    if (store.debitLater) this.debitLater = store.debitLater.bind(store);
  }

  override check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    return this.#traced("check", policies, this.store.check(key, policies, options), (decision) => (decision.allowed ? "allowed" : "denied"));
  }

  override peek(key: string, policies: readonly Policy[]): Promise<Decision> {
    return this.#traced("peek", policies, this.store.peek(key, policies), (decision) => (decision.allowed ? "allowed" : "denied"));
  }

  override debit(key: string, policies: readonly Policy[], cost: DebitCost, spentAtMs?: number): Promise<Decision> {
    // spentAtMs passed on: a refund traced goes back to the window it was spent in, as untraced.
    return this.#traced("debit", policies, this.store.debit(key, policies, cost, spentAtMs), undefined);
  }

  override acquire(key: string, policies: readonly Policy[], options: AcquireOptions): Promise<AcquireResult> {
    return this.#traced("acquire", policies, this.store.acquire(key, policies, options), (result) => (result.acquired ? "allowed" : "denied"));
  }

  /**
   * `run` started already (synchronously, in the caller's turn): the span measures from here to
   * its settling, which is the store's round trip as the caller sees it.
   */
  #traced<T>(operation: string, policies: readonly Policy[], run: Promise<T>, outcomeOf: ((value: T) => string) | undefined): Promise<T> {
    const tracer = this.#tracer;
    const parent = tracer.active();
    if (!parent) return run;
    const startedMs = performance.now();
    const span = tracer.startChild(`spillway.store ${operation}`)!;
    span.setAttribute(A.store, this.kind);
    span.setAttribute(A.operation, operation);
    span.setAttribute(A.policies, namesOf(policies));
    const finish = (failed: unknown, outcome: string | undefined) => {
      const durationMs = performance.now() - startedMs;
      annotate(parent, this.kind, policies, durationMs, outcome);
      if (outcome) span.setAttribute(A.outcome, outcome);
      if (failed) tracer.fail(span, (failed as Error).message ?? String(failed));
      span.end();
    };
    return run.then(
      (value) => {
        finish(undefined, outcomeOf?.(value));
        return value;
      },
      (error: unknown) => {
        finish(error, "error");
        throw error;
      },
    );
  }
}

/** The request span's view of its decision: the last store call's (a decision is one call, or a pause read then one). */
function annotate(parent: TraceSpan, store: string, policies: readonly Policy[], durationMs: number, outcome: string | undefined): void {
  parent.setAttribute(A.store, store);
  parent.setAttribute(A.storeDurationMs, Math.round(durationMs * 1000) / 1000);
  parent.setAttribute(A.policies, namesOf(policies));
  if (outcome) parent.setAttribute(A.outcome, outcome);
}

/** `limiter` traced when a tracer is installed, else itself (nothing added). */
export function traceLimiter(limiter: Limiter, tracer: SpillwayTracer | undefined): Limiter {
  return tracer ? new TracedLimiter(limiter, tracer) : limiter;
}
