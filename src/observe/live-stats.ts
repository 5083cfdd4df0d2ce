import type { PolicyDecision } from "../core/types.js";
import type { StoreHealth } from "../core/limiter.js";
import { HeavyHitters, type HeavyHitter } from "./heavy-hitters.js";
import type { DecisionEvent, DecisionOutcome, StoreErrorEvent, SpillwayObserver } from "./observer.js";

/** Decisions of one policy since the process (or isolate) started. */
export type OutcomeCounts = Record<DecisionOutcome, number>;

/** What GET /v1/stats answers, and what the dashboard draws. */
export interface StatsSnapshot {
  nowMs: number;
  startedMs: number;
  store: StoreHealth;
  /** Cumulative counts per policy: the dashboard charts their per-second differences. */
  policies: Record<string, OutcomeCounts>;
  /** Over the last LATENCY_SAMPLES decisions. */
  latencyMs: { p50: number | null; p99: number | null; samples: number };
  storeErrors: { unavailable: number; fault: number };
  failedOpen: number;
  top: TopEntry[];
}

/** One row of GET /v1/top. */
export interface TopEntry {
  key: string;
  policy: string;
  denials: number;
  /** What `denials` may over-count (the sketch's bound). */
  errorBound: number;
  lastSeen: string;
}

const LATENCY_SAMPLES = 2048;
/**
 * The one label of every policy the config does not name (inline policies of /v1/check and
 * the RPC): their names are the caller's to choose, so as labels or keys of the counts they
 * would let any caller grow /metrics and /v1/stats without bound.
 */
export const INLINE_POLICY_LABEL = "inline";
const emptyCounts = (): OutcomeCounts => ({ allowed: 0, denied: 0, blocked: 0, failed_open: 0, error: 0 });

export const toTopEntry = (hitter: HeavyHitter): TopEntry => ({
  key: hitter.key,
  policy: hitter.policy,
  denials: hitter.count,
  errorBound: hitter.errorBound,
  lastSeen: new Date(hitter.lastSeenMs).toISOString(),
});

/** One policy's outcome: a denial while its block holds the key is `blocked`. */
function resultOutcome(result: PolicyDecision): DecisionOutcome {
  if (result.allowed) return "allowed";
  return result.blockedMs === undefined ? "denied" : "blocked";
}

/**
 * Runtime-neutral live numbers for /v1/stats, /v1/top and the dashboard, per process (Node)
 * or isolate (Worker): counts per policy and outcome, recent store latencies, and the
 * denied keys in a fixed-size heavy-hitters sketch. Memory (and the size of a snapshot) is
 * bounded by the policies of the config, LATENCY_SAMPLES and the sketch's capacity, never by
 * the number of keys or of inline policy names (all counted as INLINE_POLICY_LABEL).
 */
export class LiveStats implements SpillwayObserver {
  readonly deniedKeys: HeavyHitters;
  private readonly startedMs = Date.now();
  private readonly counts = new Map<string, OutcomeCounts>();
  private readonly configured: Set<string>;
  private readonly latencies = new Float64Array(LATENCY_SAMPLES);
  private latencyCount = 0;
  private readonly errors = { unavailable: 0, fault: 0 };
  private failedOpen = 0;
  /** Decisions that carried a policy's near-limit warning (warnAt), per policy label. */
  private readonly warningCounts = new Map<string, number>();

  constructor(policyNames: readonly string[] = [], sketchCapacity = 100) {
    this.deniedKeys = new HeavyHitters(sketchCapacity);
    this.configured = new Set(policyNames);
    this.addPolicies(policyNames);
  }

  /**
   * Names more policies (a reloaded config's): each gets its own series from now on. A policy
   * the new config lacks keeps its counts, as a counter must, until the process restarts.
   */
  addPolicies(policyNames: readonly string[]): void {
    for (const name of policyNames) {
      this.configured.add(name);
      if (!this.counts.has(name)) this.counts.set(name, emptyCounts());
    }
  }

  decision(event: DecisionEvent): void {
    this.latencies[this.latencyCount++ % LATENCY_SAMPLES] = event.durationMs;
    if (event.outcome === "failed_open") this.failedOpen++;
    // Per policy of the stack (no callback: this runs for every decision).
    const results = event.results;
    if (results) {
      for (let i = 0; i < results.length; i++) {
        const result = results[i]!;
        this.countsOf(result.policy)[resultOutcome(result)]++;
        if (result.warning) this.countWarning(result.policy);
      }
    } else for (let i = 0; i < event.policies.length; i++) this.countsOf(event.policies[i]!.name)[event.outcome]++;
    if (event.outcome === "denied") {
      const nowMs = Date.now();
      if (!event.results) this.deniedKeys.add(event.key, this.policyLabel(event.policy), nowMs);
      else for (const result of event.results) if (!result.allowed) this.deniedKeys.add(event.key, this.policyLabel(result.policy), nowMs);
    }
  }

  /** Decisions per policy and outcome so far (Prometheus's spillway_decisions_total reads these at scrape time). */
  get outcomeCounts(): ReadonlyMap<string, Readonly<OutcomeCounts>> {
    return this.counts;
  }

  /** Decisions that carried a policy's warning (warnAt) so far, per policy label (spillway_warnings_total). */
  get warnings(): ReadonlyMap<string, number> {
    return this.warningCounts;
  }

  private countWarning(policy: string): void {
    const label = this.policyLabel(policy);
    this.warningCounts.set(label, (this.warningCounts.get(label) ?? 0) + 1);
  }

  /** The name itself for a configured policy, else INLINE_POLICY_LABEL. */
  policyLabel(policy: string): string {
    return this.configured.has(policy) ? policy : INLINE_POLICY_LABEL;
  }

  private countsOf(policy: string): OutcomeCounts {
    // Configured names are in the map from the start: only an inline policy misses, and every
    // inline policy shares one entry, so the map holds the config's policies and one more.
    const counts = this.counts.get(policy);
    if (counts) return counts;
    let inline = this.counts.get(INLINE_POLICY_LABEL);
    if (!inline) this.counts.set(INLINE_POLICY_LABEL, (inline = emptyCounts()));
    return inline;
  }

  storeError(event: StoreErrorEvent): void {
    this.errors[event.kind]++;
  }

  top(limit = 20): TopEntry[] {
    return this.deniedKeys.top(limit).map(toTopEntry);
  }

  snapshot(store: StoreHealth, topLimit = 20): StatsSnapshot {
    const samples = Math.min(this.latencyCount, LATENCY_SAMPLES);
    const sorted = this.latencies.slice(0, samples).sort();
    const quantile = (q: number) => (samples === 0 ? null : Math.round(sorted[Math.min(samples - 1, Math.floor(q * samples))]! * 1000) / 1000);
    return {
      nowMs: Date.now(),
      startedMs: this.startedMs,
      store,
      policies: Object.fromEntries([...this.counts].map(([name, counts]) => [name, { ...counts }])),
      latencyMs: { p50: quantile(0.5), p99: quantile(0.99), samples },
      storeErrors: { ...this.errors },
      failedOpen: this.failedOpen,
      top: this.top(topLimit),
    };
  }
}
