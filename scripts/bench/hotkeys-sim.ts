/**
 * The hot-key simulation (BENCHMARKS.md, "Hot keys"): N isolates, each with its own
 * LocalCache (or none), share one authoritative MemoryStore behind an injected round trip,
 * on one virtual clock. A hot key gets evenly spaced traffic; the same arrival trace runs
 * through an exact single store with no round trip, for comparison. Used by
 * scripts/bench/hotkeys.ts with large numbers and by test/unit/local/local-cache-sim.test.ts with small ones.
 */
import { setImmediate } from "node:timers";
import { type CheckOptions, type Decision, type Policy, parsePolicy } from "../../src/core/index.js";
import { ForwardingLimiter, type Limiter, LocalCache, MemoryStore } from "../../src/hono.js";

export interface SimOptions {
  isolates: number;
  rttMs: number;
  /** A fixed-window policy as written in a config (the comparison counts per aligned window). */
  policy: { name: string; algorithm: "fixed-window"; limit: number; period: number; local?: { share: number } };
  /** Arrivals per second on the hot key, over all isolates. */
  arrivalsPerSec: number;
  durationMs: number;
  /** Whether each isolate has a LocalCache in front of the store. */
  cached: boolean;
  /** Windows at the start left out of the steady-state figures. */
  warmupWindows?: number;
}

export interface SimResult {
  decisions: number;
  storeCalls: number;
  /** Store calls per decision, in the windows after the warm-up. */
  callsPerDecision: number;
  p50LatencyMs: number;
  admitted: number;
  exactAdmitted: number;
  /** Units admitted beyond the limit in any window, summed: 0 means never over-admitted. */
  overAdmitted: number;
  /** The most one steady window admitted less than the exact limiter, as a share of the limit. */
  worstUnderAdmission: number;
}

/** A virtual clock with timers: the simulation moves it from one event to the next. */
class VirtualTime {
  nowMs = 0;
  private readonly timers: { atMs: number; seq: number; fire: () => void }[] = [];
  private seq = 0;

  sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      this.timers.push({ atMs: this.nowMs + ms, seq: this.seq++, fire: resolve });
      this.timers.sort((a, b) => a.atMs - b.atMs || a.seq - b.seq);
    });
  }

  nextTimerMs(): number {
    return this.timers[0]?.atMs ?? Number.POSITIVE_INFINITY;
  }

  fireNext(): void {
    const timer = this.timers.shift()!;
    this.nowMs = timer.atMs;
    timer.fire();
  }
}

/** The authoritative store one round trip away: the decision is made halfway. */
class RemoteStore extends ForwardingLimiter {
  calls = 0;
  callsByWindow = new Map<number, number>();
  private readonly time: VirtualTime;
  private readonly rttMs: number;
  private readonly periodMs: number;
  constructor(store: MemoryStore, time: VirtualTime, rttMs: number, periodMs: number) {
    super(store);
    this.time = time;
    this.rttMs = rttMs;
    this.periodMs = periodMs;
  }

  override async check(key: string, policies: readonly Policy[], options: CheckOptions): Promise<Decision> {
    this.calls++;
    const window = Math.floor(this.time.nowMs / this.periodMs);
    this.callsByWindow.set(window, (this.callsByWindow.get(window) ?? 0) + 1);
    await this.time.sleep(this.rttMs / 2);
    const decision = await this.store.check(key, policies, options);
    await this.time.sleep(this.rttMs / 2);
    return decision;
  }
}

const flush = () => new Promise<void>((resolve) => setImmediate(resolve));
const ONE: CheckOptions = { cost: 1, mode: "reject", maxWaitMs: 0 };

export async function simulateHotKey(options: SimOptions): Promise<SimResult> {
  const policy = parsePolicy(options.policy, "policy");
  const periodMs = policy.periodMs;
  const warmup = options.warmupWindows ?? 1;
  // Arrivals: evenly spaced per isolate, isolates out of phase; starting 1 ms into a window.
  // Times are multiples of 1/1024 ms, so adding half round trips is exact in floating point.
  const quantize = (ms: number) => Math.round(ms * 1024) / 1024;
  const gapMs = (1000 * options.isolates) / options.arrivalsPerSec;
  const arrivals: { atMs: number; isolate: number }[] = [];
  for (let isolate = 0; isolate < options.isolates; isolate++) {
    for (let atMs = periodMs + 1 + (gapMs * isolate) / options.isolates; atMs < periodMs + options.durationMs; atMs += gapMs) arrivals.push({ atMs: quantize(atMs), isolate });
  }
  arrivals.sort((a, b) => a.atMs - b.atMs);
  const windowOf = (ms: number) => Math.floor(ms / periodMs);
  const firstWindow = windowOf(periodMs) + warmup;
  const lastWindow = windowOf(periodMs + options.durationMs) - 1; // the last whole window

  // The exact limiter: one store, no round trip, the same arrivals.
  let exactNowMs = 0;
  const exact = new MemoryStore({ clockMs: () => exactNowMs });
  const exactByWindow = new Map<number, number>();
  for (const arrival of arrivals) {
    exactNowMs = arrival.atMs;
    if ((await exact.check("hot", [policy], ONE)).allowed) bump(exactByWindow, windowOf(arrival.atMs));
  }

  const time = new VirtualTime();
  const remote = new RemoteStore(new MemoryStore({ clockMs: () => time.nowMs }), time, options.rttMs, periodMs);
  const limiters: Limiter[] = Array.from({ length: options.isolates }, () => (options.cached ? new LocalCache(remote, { clockMs: () => time.nowMs }) : remote));
  const latencies: number[] = [];
  const admittedByWindow = new Map<number, number>();
  const decisionsByWindow = new Map<number, number>();
  let pending = 0;
  const decideOne = async (isolate: number) => {
    const startMs = time.nowMs;
    pending++;
    const decision = await limiters[isolate]!.check("hot", [policy], ONE);
    pending--;
    const latencyMs = time.nowMs - startMs;
    latencies.push(latencyMs);
    bump(decisionsByWindow, windowOf(startMs));
    // A decision that waited for the store was made there, half a round trip before it came back.
    const decidedAtMs = latencyMs >= options.rttMs / 2 ? time.nowMs - options.rttMs / 2 : time.nowMs;
    if (decision.allowed) bump(admittedByWindow, windowOf(decidedAtMs));
  };

  let next = 0;
  while (next < arrivals.length || pending > 0) {
    const arrival = arrivals[next];
    if (arrival && arrival.atMs <= time.nextTimerMs()) {
      time.nowMs = arrival.atMs;
      next++;
      void decideOne(arrival.isolate);
    } else {
      time.fireNext();
    }
    await flush();
  }

  let overAdmitted = 0;
  for (const count of admittedByWindow.values()) overAdmitted += Math.max(0, count - policy.limit);
  let worstUnderAdmission = 0;
  let steadyCalls = 0;
  let steadyDecisions = 0;
  for (let window = firstWindow; window <= lastWindow; window++) {
    const under = (exactByWindow.get(window) ?? 0) - (admittedByWindow.get(window) ?? 0);
    worstUnderAdmission = Math.max(worstUnderAdmission, under / policy.limit);
    steadyCalls += remote.callsByWindow.get(window) ?? 0;
    steadyDecisions += decisionsByWindow.get(window) ?? 0;
  }
  latencies.sort((a, b) => a - b);
  return {
    decisions: latencies.length,
    storeCalls: remote.calls,
    callsPerDecision: steadyCalls / Math.max(1, steadyDecisions),
    p50LatencyMs: latencies[Math.floor(latencies.length / 2)] ?? 0,
    admitted: sum(admittedByWindow),
    exactAdmitted: sum(exactByWindow),
    overAdmitted,
    worstUnderAdmission,
  };
}

function bump(counts: Map<number, number>, key: number): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function sum(counts: Map<number, number>): number {
  let total = 0;
  for (const count of counts.values()) total += count;
  return total;
}
