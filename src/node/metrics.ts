import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from "prom-client";
import type { Limiter } from "../limiter.js";
import { DECISION_OUTCOMES, type DecisionEvent, type DecisionOutcome, type SpillwayObserver, forEachPolicyOutcome } from "../observe/observer.js";

/** Store round trips: 50 µs (memory) … 2.5 s (a Redis timing out). */
const DECISION_BUCKETS_S = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const ORIGIN_BUCKETS_S = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The Prometheus series of `spillway serve`, fed by the observer (see README "Metrics").
 * Labels are policies, outcomes, stores, routes and statuses, all bounded by the config:
 * never a key. Children are looked up once per label set and kept, so a decision costs a
 * Map lookup and an increment.
 */
export class PrometheusObserver implements SpillwayObserver {
  readonly registry = new Registry();
  private readonly decisions: Counter<"policy" | "outcome">;
  private readonly decisionDuration: Histogram<"store">;
  private readonly storeErrors: Counter<"store" | "kind">;
  private readonly gatewayRequests: Counter<"route" | "status">;
  private readonly originSeconds: Histogram<"route">;
  private readonly decisionChildren = new Map<string, Record<DecisionOutcome, { inc(): void }>>();
  private readonly durationChildren = new Map<string, { observe(value: number): void }>();

  constructor(limiter: Limiter, policyNames: readonly string[]) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry });
    this.decisions = new Counter({ name: "spillway_decisions_total", help: "Decisions per policy of the stack, by outcome (allowed, denied, failed_open, error).", labelNames: ["policy", "outcome"], registers });
    this.decisionDuration = new Histogram({ name: "spillway_decision_duration_seconds", help: "Store round trip of a decision as the caller sees it.", labelNames: ["store"], buckets: DECISION_BUCKETS_S, registers });
    this.storeErrors = new Counter({ name: "spillway_store_errors_total", help: "Store errors: unavailable (failMode applies) or fault (answered with an error).", labelNames: ["store", "kind"], registers });
    this.gatewayRequests = new Counter({ name: "spillway_gateway_requests_total", help: "Gateway answers by route (its index, or unrouted) and status.", labelNames: ["route", "status"], registers });
    this.originSeconds = new Histogram({ name: "spillway_origin_duration_seconds", help: "Time until the origin's answer headers, by route.", labelNames: ["route"], buckets: ORIGIN_BUCKETS_S, registers });
    new Gauge({
      name: "spillway_store_up",
      help: "1 when the store answers its health check, else 0.",
      labelNames: ["store"],
      registers,
      async collect() {
        const health = await limiter.health().catch(() => ({ ok: false }));
        this.set({ store: limiter.kind }, health.ok ? 1 : 0);
      },
    });
    // Every configured series exists from the start at 0: rates work from the first scrape.
    for (const name of policyNames) this.decisionChild(name);
    for (const kind of ["unavailable", "fault"]) this.storeErrors.labels(limiter.kind, kind).inc(0);
    this.durationChild(limiter.kind);
  }

  decision(event: DecisionEvent): void {
    this.durationChild(event.store).observe(event.durationMs / 1000);
    forEachPolicyOutcome(event, (policy, outcome) => this.decisionChild(policy)[outcome].inc());
  }

  storeError(event: { store: string; kind: "unavailable" | "fault" }): void {
    this.storeErrors.labels(event.store, event.kind).inc();
  }

  gatewayRequest(event: { route: string; status: number }): void {
    this.gatewayRequests.labels(event.route, String(event.status)).inc();
  }

  originDuration(event: { route: string; durationMs: number }): void {
    this.originSeconds.labels(event.route).observe(event.durationMs / 1000);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private decisionChild(policy: string): Record<DecisionOutcome, { inc(): void }> {
    let found = this.decisionChildren.get(policy);
    if (!found) {
      const children = Object.fromEntries(DECISION_OUTCOMES.map((outcome) => [outcome, this.decisions.labels(policy, outcome)])) as Record<DecisionOutcome, { inc(value?: number): void }>;
      for (const child of Object.values(children)) child.inc(0);
      this.decisionChildren.set(policy, (found = children));
    }
    return found;
  }

  private durationChild(store: string): { observe(value: number): void } {
    let found = this.durationChildren.get(store);
    if (!found) this.durationChildren.set(store, (found = this.decisionDuration.labels(store)));
    return found;
  }
}
