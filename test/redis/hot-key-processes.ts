// Node processes deciding one hot key on one real Redis (fixtures/hot-key-client.ts), and
// what their reports add up to. Shared by test/redis/local-cache-processes.test.ts and
// scripts/bench/hotkeys-redis.ts.
import { Redis } from "ioredis";
import { TsChild } from "./child-processes.js";
import type { HotKeyJob, HotKeyReport } from "./fixtures/hot-key-client.js";

type Event = { ready: true } | { error: string } | HotKeyReport;

export type HotKeyClient = TsChild<HotKeyJob, Event>;

export async function startHotKeyClients(redisUrl: string, count: number): Promise<HotKeyClient[]> {
  const clients = Array.from({ length: count }, () => new TsChild<HotKeyJob, Event>(new URL("./fixtures/hot-key-client.ts", import.meta.url), [redisUrl]));
  await Promise.all(clients.map((client) => client.waitFor((event) => "ready" in event, 20_000, "ready")));
  return clients;
}

/** Script calls Redis has run (FCALL and EVALSHA: every store decision is one), from INFO commandstats. */
export async function scriptCalls(redis: Redis): Promise<number> {
  const info = await redis.info("commandstats");
  let calls = 0;
  for (const match of info.matchAll(/^cmdstat_(?:fcall|evalsha|eval):calls=(\d+)/gm)) calls += Number(match[1]);
  return calls;
}

export interface HotKeyRun {
  reports: HotKeyReport[];
  /** Script calls Redis ran during the run: the store calls of every process. */
  storeCalls: number;
  startAtMs: number;
  durationMs: number;
}

/**
 * Gives each client its job, all starting at one moment at least `leadMs` from now (with
 * `alignMs`, the next multiple of it: a window's start); waits for every report.
 */
export async function runHotKey(clients: HotKeyClient[], redis: Redis, jobs: Omit<HotKeyJob, "startAtMs">[], options: { leadMs?: number; alignMs?: number } = {}): Promise<HotKeyRun> {
  const before = await scriptCalls(redis);
  const earliestMs = Date.now() + (options.leadMs ?? 200);
  const startAtMs = options.alignMs ? Math.ceil(earliestMs / options.alignMs) * options.alignMs : earliestMs;
  const waits = clients.map((client, index) => {
    client.events.length = 0;
    client.send({ ...jobs[index]!, startAtMs });
    return client.waitFor((event) => !("ready" in event), startAtMs - Date.now() + jobs[index]!.durationMs + 30_000, "a report");
  });
  const events = await Promise.all(waits);
  const failed = events.find((event): event is { error: string } => "error" in event);
  if (failed) throw new Error(`a hot-key client failed: ${failed.error}`);
  return { reports: events as HotKeyReport[], storeCalls: (await scriptCalls(redis)) - before, startAtMs, durationMs: Math.max(...jobs.map((job) => job.durationMs)) };
}

export interface WindowSummary {
  /** Decisions answered, per second of the run (first asked to last answered, the slowest process). */
  decisionsPerSec: number;
  decisions: number;
  admitted: number;
  errors: number;
  storeCallsPerDecision: number;
  /** Admissions certainly decided in a window beyond its limit, summed over windows. */
  overAdmitted: number;
  /** Windows wholly inside the run (from its start to its last ask). */
  wholeWindows: number;
  /** Whole windows whose demand reached the limit. */
  fullWindows: number;
  /**
   * The most any whole window admitted below min(its demand, limit), what an exact limiter
   * would have admitted (admissions crossing its edges credited to it), in units.
   */
  worstUnderAdmitted: number;
  /** The same, summed over whole windows. */
  underAdmittedTotal: number;
}

/** Adds the processes' window counts up against `limit` per `windowMs` (fixed-window: the store's grid). */
export function summarize(run: HotKeyRun, limit: number, windowMs: number): WindowSummary {
  const sum = (pick: (report: HotKeyReport) => Record<number, number>) => {
    const total = new Map<number, number>();
    for (const report of run.reports) for (const [index, count] of Object.entries(pick(report))) total.set(Number(index), (total.get(Number(index)) ?? 0) + count);
    return total;
  };
  const certain = sum((report) => report.certain);
  const straddling = sum((report) => report.straddling);
  const offered = sum((report) => report.offered);
  const decisions = run.reports.reduce((total, report) => total + report.decisions, 0);
  const firstMs = Math.min(...run.reports.map((report) => report.firstAskedAtMs));
  const lastMs = Math.max(...run.reports.map((report) => report.lastAnsweredAtMs));
  let overAdmitted = 0;
  for (const count of certain.values()) overAdmitted += Math.max(0, count - limit);
  let wholeWindows = 0;
  let fullWindows = 0;
  let worstUnderAdmitted = 0;
  let underAdmittedTotal = 0;
  for (let index = Math.ceil(run.startAtMs / windowMs); (index + 1) * windowMs <= run.startAtMs + run.durationMs; index++) {
    const demand = offered.get(index) ?? 0;
    // Crossing admissions of either edge may have been this window's: credited to it.
    const admitted = (certain.get(index) ?? 0) + (straddling.get(index - 1) ?? 0) + (straddling.get(index) ?? 0);
    const short = Math.max(0, Math.min(demand, limit) - admitted);
    wholeWindows++;
    underAdmittedTotal += short;
    worstUnderAdmitted = Math.max(worstUnderAdmitted, short);
    if (demand >= limit) fullWindows++;
  }
  return {
    decisionsPerSec: decisions / ((lastMs - firstMs) / 1000),
    decisions,
    admitted: run.reports.reduce((total, report) => total + report.admitted, 0),
    errors: run.reports.reduce((total, report) => total + report.errors, 0),
    storeCallsPerDecision: run.storeCalls / Math.max(1, decisions),
    overAdmitted,
    wholeWindows,
    fullWindows,
    worstUnderAdmitted,
    underAdmittedTotal,
  };
}

/**
 * A token bucket's refill moments, from the anchors its Redis state held during a run (in the
 * order seen). Refills fall on a grid from the key's first decision; when the bucket is full
 * the key expires, and the next decision starts a new grid. That new start is no refill (the
 * bucket was already full since the old grid's last point), so it is left out: between two
 * of the moments answered, the store admits at most the burst.
 */
export function tokenBucketRefillsMs(anchorsMs: readonly number[], periodMs: number, untilMs: number): number[] {
  const starts: number[] = [];
  for (const anchorMs of anchorsMs) {
    const last = starts.at(-1);
    if (last === undefined || (anchorMs - last) % periodMs !== 0) starts.push(anchorMs);
  }
  const refills = starts.length > 0 ? [starts[0]!] : [];
  starts.forEach((startMs, index) => {
    const endMs = starts[index + 1] ?? untilMs;
    for (let atMs = startMs + periodMs; atMs < endMs; atMs += periodMs) refills.push(atMs);
  });
  return refills;
}
