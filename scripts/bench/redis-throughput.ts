// Part 1 of bench:redis: decisions per second and latency of each contender against one
// Redis, closed loop (each of `concurrency` callers awaits its answer, then sends again),
// every contender on its own ioredis connection. The contenders of one cell take turns in
// short slices, so that the drift of a shared machine (its fast and slow minutes) hits all
// of them alike: their ratios are what the bench is for.
import type { Redis } from "ioredis";
import { redisCpuMs, redisUsec, resetRedisStats } from "./redis-stats.js";
import { type Contender, type Decide, FLOOR_EVALSHA, type LimitSpec, RATE_LIMITER_FLEXIBLE, connect } from "./redis-contenders.js";

export interface CellResult {
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  /** Calls answered (errors not counted). */
  calls: number;
  errors: number;
  /** Redis's own time per call (INFO commandstats), when measured. */
  redisUsPerCall?: number;
  /** CPU per call of this Node process (load generator and limiter alike) and of the Redis process (I/O included), when measured. */
  nodeCpuUsPerCall?: number;
  redisCpuUsPerCall?: number;
  /** Decisions per second in each of the contender's turns, in turn order (turn i of every contender falls in the same slice). */
  turnRates?: number[];
}

export interface ThroughputOptions {
  url: string;
  runId: string;
  contenders: readonly Contender[];
  concurrencies: readonly number[];
  keyCounts: readonly number[];
  /** Each contender's turn within a cell. */
  sliceMs: number;
  /** Turns per contender and cell: each is measured for slices × sliceMs in all. */
  slices: number;
  warmUpMs: number;
}

/** Never denies during the run, so every contender takes its admit-and-write path on a live state. */
const HUGE: LimitSpec = { limit: 1_000_000_000, periodMs: 86_400_000, neverDeny: true };

/** What one closed-loop run adds to a cell: its answered calls' latencies, its errors and its length. */
interface Run {
  latenciesMs: number[];
  errors: number;
  elapsedMs: number;
}

/** `concurrency` callers send `decide` calls for `durationMs`, each awaiting its answer; latencies go to `latenciesMs`. */
async function closedLoop(decide: Decide, concurrency: number, keyCount: number, durationMs: number, latenciesMs: number[]): Promise<Run> {
  let errors = 0;
  let next = 0;
  const deadline = performance.now() + durationMs;
  const caller = async () => {
    while (performance.now() < deadline) {
      const key = keyCount === 1 ? "hot" : `k${next++ % keyCount}`;
      const startedMs = performance.now();
      try {
        await decide(key);
        latenciesMs.push(performance.now() - startedMs);
      } catch {
        errors++;
      }
    }
  };
  const startedMs = performance.now();
  await Promise.all(Array.from({ length: concurrency }, caller));
  return { latenciesMs, errors, elapsedMs: performance.now() - startedMs };
}

function cellOf(latenciesMs: number[], errors: number, elapsedMs: number): CellResult {
  latenciesMs.sort((a, b) => a - b);
  const at = (q: number) => latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))] ?? Number.NaN;
  return { perSecond: (latenciesMs.length / elapsedMs) * 1000, p50Ms: at(0.5), p99Ms: at(0.99), calls: latenciesMs.length, errors };
}

/** One contender alone for `durationMs` (warm-ups and single measurements). */
export async function measureCell(decide: Decide, concurrency: number, keyCount: number, durationMs: number): Promise<CellResult> {
  const run = await closedLoop(decide, concurrency, keyCount, durationMs, []);
  return cellOf(run.latenciesMs, run.errors, run.elapsedMs);
}

/** Results by `${keyCount}/${concurrency}/${contender.id}`. */
export type ThroughputResults = Map<string, CellResult>;
export const cellId = (keyCount: number, concurrency: number, contender: Contender) => `${keyCount}/${concurrency}/${contender.id}`;

/** A contender's slices of one cell, summed. */
interface Tally {
  latenciesMs: number[];
  errors: number;
  elapsedMs: number;
  nodeCpuUs: number;
  redisCpuMs: number;
  redisUs: number;
  turnRates: number[];
}

export async function runThroughput(options: ThroughputOptions, progress: (line: string) => void): Promise<ThroughputResults> {
  const admin = await connect(options.url);
  const clients: Redis[] = [admin];
  const deciders = new Map<string, Decide>();
  try {
    for (const contender of options.contenders) {
      const client = await connect(options.url);
      clients.push(client);
      deciders.set(contender.id, await contender.create(client, HUGE, `bench:${options.runId}:${contender.id}:`));
    }
    const results: ThroughputResults = new Map();
    for (const keyCount of options.keyCounts) {
      for (const concurrency of options.concurrencies) {
        const contenders = options.contenders;
        for (const contender of contenders) await measureCell(deciders.get(contender.id)!, concurrency, keyCount, options.warmUpMs);
        const tallies = contenders.map((): Tally => ({ latenciesMs: [], errors: 0, elapsedMs: 0, nodeCpuUs: 0, redisCpuMs: 0, redisUs: 0, turnRates: [] }));
        for (let slice = 0; slice < options.slices; slice++) {
          // Each slice starts with the next contender, so that none always follows the same one.
          for (let turn = 0; turn < contenders.length; turn++) {
            const index = (slice + turn) % contenders.length;
            const tally = tallies[index]!;
            await resetRedisStats(admin);
            const redisCpuBeforeMs = await redisCpuMs(admin);
            const nodeCpuBefore = process.cpuUsage();
            const answeredBefore = tally.latenciesMs.length;
            const run = await closedLoop(deciders.get(contenders[index]!.id)!, concurrency, keyCount, options.sliceMs, tally.latenciesMs);
            tally.turnRates.push(((tally.latenciesMs.length - answeredBefore) / run.elapsedMs) * 1000);
            const nodeCpu = process.cpuUsage(nodeCpuBefore);
            tally.nodeCpuUs += nodeCpu.user + nodeCpu.system;
            tally.redisCpuMs += (await redisCpuMs(admin)) - redisCpuBeforeMs;
            tally.redisUs += await redisUsec(admin);
            tally.errors += run.errors;
            tally.elapsedMs += run.elapsedMs;
          }
        }
        contenders.forEach((contender, index) => {
          const tally = tallies[index]!;
          const result = cellOf(tally.latenciesMs, tally.errors, tally.elapsedMs);
          const calls = result.calls + result.errors;
          result.nodeCpuUsPerCall = tally.nodeCpuUs / calls;
          result.redisCpuUsPerCall = (tally.redisCpuMs * 1000) / calls;
          result.redisUsPerCall = tally.redisUs / calls;
          result.turnRates = tally.turnRates;
          results.set(cellId(keyCount, concurrency, contender), result);
          progress(
            `${String(keyCount).padStart(5)} keys  c=${String(concurrency).padStart(3)}  ${contender.label.padEnd(60)} ${Math.round(result.perSecond).toString().padStart(7)}/s  p50 ${result.p50Ms.toFixed(2)}  p99 ${result.p99Ms.toFixed(2)}  redis script ${fixed(result.redisUsPerCall, 1)} µs  cpu node ${fixed(result.nodeCpuUsPerCall, 1)} + redis ${fixed(result.redisCpuUsPerCall, 1)} µs${result.errors ? `  errors ${result.errors}` : ""}`,
          );
        });
      }
    }
    return results;
  } finally {
    for (const client of clients) client.disconnect();
  }
}

const fixed = (value: number | undefined, digits: number) => (value !== undefined && Number.isFinite(value) ? value.toFixed(digits) : "–");
const keysLabel = (keyCount: number) => (keyCount === 1 ? "1 key" : `${keyCount.toLocaleString("en-US")} keys`);

/** One table per key count: every contender at every concurrency, with its ratios. */
export function throughputTables(options: ThroughputOptions, results: ThroughputResults): string[] {
  const lines: string[] = [];
  for (const keyCount of options.keyCounts) {
    lines.push(
      `**${keysLabel(keyCount)}**`,
      "",
      "| contender | callers | decisions/s | p50 ms | p99 ms | Redis script µs/decision | CPU µs/decision: Node + Redis | ratio to EVALSHA floor | ratio to rate-limiter-flexible | errors |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    );
    for (const concurrency of options.concurrencies) {
      const floor = results.get(cellId(keyCount, concurrency, FLOOR_EVALSHA));
      const rlf = results.get(cellId(keyCount, concurrency, RATE_LIMITER_FLEXIBLE));
      for (const contender of options.contenders) {
        const result = results.get(cellId(keyCount, concurrency, contender));
        if (!result) continue;
        const toFloor = floor ? fixed(result.perSecond / floor.perSecond, 2) : "–";
        const toRlf = rlf ? fixed(result.perSecond / rlf.perSecond, 2) : "–";
        lines.push(
          `| ${contender.label} | ${concurrency} | ${Math.round(result.perSecond).toLocaleString("en-US")} | ${fixed(result.p50Ms, 2)} | ${fixed(result.p99Ms, 2)} | ${fixed(result.redisUsPerCall, 1)} | ${fixed(result.nodeCpuUsPerCall, 1)} + ${fixed(result.redisCpuUsPerCall, 1)} | ${toFloor} | ${toRlf} | ${result.errors} |`,
        );
      }
    }
    lines.push("");
  }
  return lines;
}
