import { Counter, Gauge, Registry, collectDefaultMetrics } from "prom-client";
import type { CallCounts, Limiter } from "../../core/limiter.js";
import { BucketHistogram } from "./bucket-histogram.js";
import type { LiveStats } from "../../observe/live-stats.js";
import { DECISION_OUTCOMES, type DecisionEvent, type SpillwayObserver } from "../../observe/observer.js";

/** Store round trips: 50 µs (memory) … 2.5 s (a Redis timing out). */
const DECISION_BUCKETS_S = [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const ORIGIN_BUCKETS_S = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];

/**
 * The Prometheus series of `spillway serve`, fed by the observer (see README "Metrics").
 * Labels are policies, outcomes, stores, routes and statuses, all bounded by the config:
 * never a key, and never an inline policy's name (those share the label `inline`). Children are looked up once per label set and kept, so a decision costs a
 * Map lookup and an increment.
 */
export class PrometheusObserver implements SpillwayObserver {
  readonly registry = new Registry();
  private readonly decisions: Counter<"policy" | "outcome">;
  private readonly decisionDuration: BucketHistogram;
  private readonly storeErrors: Counter<"store" | "kind">;
  private readonly gatewayRequests: Counter<"route" | "status">;
  private readonly originSeconds: BucketHistogram;
  // Plain counts, read into prom-client at scrape time: a labelled inc() hashes its labels on
  // every call, a cost the request path does not need to pay. Decisions per policy and
  // outcome are the live stats' own counts (one count per decision, not two).
  private readonly durationChildren = new Map<string, { observe(value: number): void }>();
  private readonly requestCounts = new Map<string, { route: string; status: string; count: number }>();
  private readonly originChildren = new Map<string, { observe(value: number): void }>();
  /** The configured concurrency policies, whose lease gauges exist from the start at 0. */
  private readonly concurrencyNames: Set<string>;

  /**
   * `stats`: the live stats fed by the same observer, whose per-policy counts (one series per
   * configured policy from the start) spillway_decisions_total reports. `concurrencyPolicyNames`:
   * the config's concurrency policies, whose lease gauges start at 0.
   */
  constructor(limiter: Limiter, stats: LiveStats, concurrencyPolicyNames: readonly string[] = []) {
    const registers = [this.registry];
    this.concurrencyNames = new Set(concurrencyPolicyNames);
    collectDefaultMetrics({ register: this.registry });
    this.decisions = new Counter({
      name: "spillway_decisions_total",
      help: "Decisions per policy of the stack, by outcome (allowed, denied, blocked: denied while a block holds the key, failed_open, error).",
      labelNames: ["policy", "outcome"],
      registers,
      collect() {
        this.reset();
        for (const [policy, counts] of stats.outcomeCounts) for (const outcome of DECISION_OUTCOMES) this.inc({ policy, outcome }, counts[outcome]);
      },
    });
    new Counter({
      name: "spillway_warnings_total",
      help: "Decisions that carried a policy's near-limit warning (warnAt), per policy.",
      labelNames: ["policy"],
      registers,
      collect() {
        this.reset();
        for (const [policy, count] of stats.warnings) this.inc({ policy }, count);
      },
    });
    const registry = this.registry;
    this.decisionDuration = new BucketHistogram({ name: "spillway_decision_duration_seconds", help: "Store round trip of a decision as the caller sees it.", labelName: "store", buckets: DECISION_BUCKETS_S, registry });
    this.storeErrors = new Counter({ name: "spillway_store_errors_total", help: "Store errors: unavailable (failMode applies) or fault (answered with an error).", labelNames: ["store", "kind"], registers });
    const requestCounts = this.requestCounts;
    this.gatewayRequests = new Counter({
      name: "spillway_gateway_requests_total",
      help: "Gateway answers by route (its index, or unrouted) and status.",
      labelNames: ["route", "status"],
      registers,
      collect() {
        this.reset();
        for (const { route, status, count } of requestCounts.values()) this.inc({ route, status }, count);
      },
    });
    this.originSeconds = new BucketHistogram({ name: "spillway_origin_duration_seconds", help: "Time until the origin's answer headers, by route.", labelName: "route", buckets: ORIGIN_BUCKETS_S, registry });
    new Gauge({
      name: "spillway_store_up",
      help: "1 when the store answers its health check, else 0.",
      labelNames: ["store"],
      registers,
      // --workers: up only when every worker's store answers.
      aggregator: "min",
      async collect() {
        const health = await limiter.health().catch(() => ({ ok: false }));
        this.set({ store: limiter.kind }, health.ok ? 1 : 0);
      },
    });
    if (limiter.storeResets) {
      const storeResets = () => limiter.storeResets!();
      new Counter({
        name: "spillway_store_resets_total",
        help: "Times the store lost its data (Redis restarted empty, FLUSHALL, a failover): concurrency leases are fenced for one lease length after each.",
        labelNames: ["store"],
        registers,
        // --workers: each worker's guard sees the same loss.
        aggregator: "max",
        collect() {
          this.reset();
          this.inc({ store: limiter.kind }, storeResets());
        },
      });
    }
    if (limiter.leaseCounts) {
      // Only a store that can count its leases in place reports them (the memory store).
      const leaseCounts = () => limiter.leaseCounts!();
      const concurrencyNames = this.concurrencyNames;
      for (const [name, field, help] of [
        ["spillway_leases_held", "held", "Concurrency leases held now, per policy."],
        ["spillway_lease_waiters", "waiters", "Callers waiting for a concurrency lease now, per policy."],
      ] as const) {
        new Gauge({
          name,
          help,
          labelNames: ["policy"],
          registers,
          collect() {
            this.reset();
            // Inline policies' leases add up under one label (stats.policyLabel): never a series per name.
            const byLabel = new Map<string, number>([...concurrencyNames].map((name) => [name, 0]));
            for (const [policy, count] of leaseCounts()) {
              const label = stats.policyLabel(policy);
              byLabel.set(label, (byLabel.get(label) ?? 0) + count[field]);
            }
            for (const [policy, value] of byLabel) this.set({ policy }, value);
          },
        });
      }
    }
    if (limiter.callCounts) registerCallQueueMetrics(this.registry, limiter.kind, () => limiter.callCounts!());
    // Every configured series exists from the start at 0: rates work from the first scrape.
    for (const kind of ["unavailable", "fault"]) this.storeErrors.labels(limiter.kind, kind).inc(0);
    this.durationChild(limiter.kind);
  }

  /** A reloaded config's concurrency policies: their lease gauges start at 0 too. */
  addConcurrencyPolicies(names: readonly string[]): void {
    for (const name of names) this.concurrencyNames.add(name);
  }

  decision(event: DecisionEvent): void {
    this.durationChild(event.store).observe(event.durationMs / 1000);
  }

  storeError(event: { store: string; kind: "unavailable" | "fault" }): void {
    this.storeErrors.labels(event.store, event.kind).inc();
  }

  gatewayRequest(event: { route: string; status: number }): void {
    const id = `${event.route} ${event.status}`;
    const found = this.requestCounts.get(id);
    if (found) found.count++;
    // Routes come from the config and statuses are three digits: this map stays small.
    else this.requestCounts.set(id, { route: event.route, status: String(event.status), count: 1 });
  }

  originDuration(event: { route: string; durationMs: number }): void {
    let child = this.originChildren.get(event.route);
    if (!child) this.originChildren.set(event.route, (child = this.originSeconds.child(event.route)));
    child.observe(event.durationMs / 1000);
  }

  /** The exposition text and its content type. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private durationChild(store: string): { observe(value: number): void } {
    let found = this.durationChildren.get(store);
    if (!found) this.durationChildren.set(store, (found = this.decisionDuration.child(store)));
    return found;
  }
}

/**
 * The store's call bound (docs/operations.md, "Overload and bursts"), read at scrape time:
 * calls waiting for a slot, calls in flight, and calls shed (503 overloaded, never admitted).
 */
function registerCallQueueMetrics(registry: Registry, store: string, counts: () => CallCounts): void {
  const registers = [registry];
  new Gauge({
    name: "spillway_queue_depth",
    help: "Store calls waiting for a slot now (past --max-inflight calls in flight).",
    labelNames: ["store"],
    registers,
    collect() {
      this.set({ store }, counts().queued);
    },
  });
  new Gauge({
    name: "spillway_store_inflight",
    help: "Store calls sent and not yet answered now (at most --max-inflight).",
    labelNames: ["store"],
    registers,
    collect() {
      this.set({ store }, counts().inFlight);
    },
  });
  new Counter({
    name: "spillway_shed_total",
    help: "Store calls shed with 503 overloaded (the queue was full or a call waited too long); never admitted.",
    labelNames: ["store"],
    registers,
    collect() {
      this.reset();
      this.inc({ store }, counts().shed);
    },
  });
}
