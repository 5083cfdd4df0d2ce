import type { Cluster, Redis } from "ioredis";
import type { RedisClient } from "./scripts.js";
import { isCluster } from "./connection.js";

/** A sample older than this is refreshed by the next call that needs the clock (clocks drift, NTP steps them). */
const REFRESH_AFTER_MS = 1000;
/** Samples older than this are forgotten: the best of the recent ones is the estimate. */
const SAMPLE_WINDOW_MS = 5000;
/** A TIME that takes longer than this measures nothing worth keeping. */
const SAMPLE_TIMEOUT_MS = 1000;

interface Sample {
  atMs: number;
  /** A lower bound of (Redis's clock - performance.now()) from one TIME. */
  offsetMs: number;
}

/**
 * What Redis's clock reads when this process's performance.now() reads t: at least
 * t + offsetMs(), learnt from TIME. A call that must not act once its caller has given up
 * (a balance's spend, top-up or debit: docs/limits.md, "A call answered 503 spent nothing")
 * carries a deadline in Redis's own time, and the script does nothing past it.
 *
 * Each TIME gives a lower bound: Redis read its clock before this process read the answer, so
 * server - (performance.now() at the answer) is at most the true offset. A lower bound only
 * makes a deadline earlier than meant (a call refused as late that could have run), never later
 * than its caller's wait. Samples are per master (a Cluster's nodes have clocks of their own):
 * the estimate is the smallest over the masters of each one's best recent bound, kept for
 * SAMPLE_WINDOW_MS, so a server clock stepped back by NTP is followed within that window.
 * No timer: the calls that need the clock refresh it (one TIME per master per second at most),
 * and a client that makes none costs nothing.
 */
export class ServerClock {
  private readonly client: RedisClient;
  private readonly samples = new Map<string, Sample[]>();
  private sampling: Promise<void> | undefined;
  private lastSampleMs = Number.NEGATIVE_INFINITY;

  constructor(client: RedisClient) {
    this.client = client;
  }

  /** Forgets what was measured: another server may answer now (a failover, a reconnection). */
  forget(): void {
    this.samples.clear();
    this.lastSampleMs = Number.NEGATIVE_INFINITY;
  }

  /**
   * Redis's time (ms, rounded down) when performance.now() reads atMs, as a lower bound;
   * undefined until measured (then `sample()` and ask again). Starts a refresh when due.
   */
  serverMsAt(atMs: number): number | undefined {
    if (performance.now() - this.lastSampleMs > REFRESH_AFTER_MS) void this.sample();
    const offsetMs = this.offsetMs();
    return offsetMs === undefined ? undefined : Math.floor(atMs + offsetMs);
  }

  /** The estimate: the smallest over the masters of each one's best recent bound. */
  offsetMs(): number | undefined {
    const nodes = this.masters();
    if (nodes.length === 0) return undefined;
    const sinceMs = performance.now() - SAMPLE_WINDOW_MS;
    let offsetMs: number | undefined;
    for (const node of nodes) {
      let best: number | undefined;
      for (const sample of this.samples.get(nameOf(node)) ?? []) if (sample.atMs >= sinceMs && (best === undefined || sample.offsetMs > best)) best = sample.offsetMs;
      if (best === undefined) return undefined;
      offsetMs = offsetMs === undefined ? best : Math.min(offsetMs, best);
    }
    return offsetMs;
  }

  /**
   * A reading of Redis's clock that a call's answer carried (single.lua's TIME), read at
   * answeredMs: a sample for free, on a standalone Redis (a Cluster's answer names no node).
   */
  observe(serverMs: number, answeredMs: number): void {
    if (isCluster(this.client)) return;
    this.keep(nameOf(this.client as Redis), serverMs - answeredMs, answeredMs);
  }

  /**
   * TIME per master, three times in a row (the bound is as tight as the quickest answer read:
   * a busy event loop reads some late); a node that does not answer keeps its older samples.
   */
  sample(): Promise<void> {
    if (!this.sampling) this.lastSampleMs = performance.now();
    this.sampling ??= Promise.all(this.masters().map(async (node) => {
      for (let i = 0; i < 3; i++) await this.sampleNode(node);
    })).then(
      () => void (this.sampling = undefined),
      () => void (this.sampling = undefined),
    );
    return this.sampling;
  }

  private async sampleNode(node: Redis): Promise<void> {
    if (node.status !== "ready") return;
    const sentMs = performance.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const time = await Promise.race([node.time(), new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error("TIME timed out")), SAMPLE_TIMEOUT_MS)))]);
      const answeredMs = performance.now();
      if (answeredMs - sentMs > SAMPLE_TIMEOUT_MS) return;
      this.keep(nameOf(node), Number(time[0]) * 1000 + Number(time[1]) / 1000 - answeredMs, answeredMs);
    } catch {
      // Unmeasured this time: the older samples stand until they age out.
    } finally {
      clearTimeout(timer);
    }
  }

  /** Keeps a sample, dropping those past the window (at most a few per node: one per call is too many to keep). */
  private keep(name: string, offsetMs: number, atMs: number): void {
    const kept = (this.samples.get(name) ?? []).filter((sample) => sample.atMs >= atMs - SAMPLE_WINDOW_MS);
    const last = kept[kept.length - 1];
    // Samples within 100 ms of each other keep only the best one: the window stays short.
    if (last && atMs - last.atMs < 100) {
      if (offsetMs > last.offsetMs) kept[kept.length - 1] = { atMs, offsetMs };
    } else kept.push({ atMs, offsetMs });
    this.samples.set(name, kept);
  }

  private masters(): Redis[] {
    return isCluster(this.client) ? (this.client as Cluster).nodes("master") : [this.client as Redis];
  }
}

function nameOf(node: Redis): string {
  return `${node.options.host ?? ""}:${node.options.port ?? ""}`;
}
