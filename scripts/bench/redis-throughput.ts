// Part 1 of bench:redis: decisions per second and latency of each contender against one
// Redis, closed loop (each of `concurrency` callers awaits its answer, then sends again),
// every contender on its own ioredis connection, cells interleaved so drift hits all alike.
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
}

export interface ThroughputOptions {
  url: string;
  runId: string;
  contenders: readonly Contender[];
  concurrencies: readonly number[];
  keyCounts: readonly number[];
  cellMs: number;
  warmUpMs: number;
  /** The whole grid is run this many times, interleaved; each cell keeps its best round (noise only ever slows a run down). */
  rounds: number;
}

/** Never denies during the run, so every contender takes its admit-and-write path on a live state. */
const HUGE: LimitSpec = { limit: 1_000_000_000, periodMs: 86_400_000, neverDeny: true };

export async function measureCell(decide: Decide, concurrency: number, keyCount: number, durationMs: number): Promise<CellResult> {
  const latenciesMs: number[] = [];
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
  const elapsedMs = performance.now() - startedMs;
  latenciesMs.sort((a, b) => a - b);
  const at = (q: number) => latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))] ?? Number.NaN;
  return { perSecond: (latenciesMs.length / elapsedMs) * 1000, p50Ms: at(0.5), p99Ms: at(0.99), calls: latenciesMs.length, errors };
}

/** Results by `${keyCount}/${concurrency}/${contender.id}`. */
export type ThroughputResults = Map<string, CellResult>;
export const cellId = (keyCount: number, concurrency: number, contender: Contender) => `${keyCount}/${concurrency}/${contender.id}`;

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
    for (let round = 1; round <= options.rounds; round++) {
      for (const keyCount of options.keyCounts) {
        for (const concurrency of options.concurrencies) {
          for (const contender of options.contenders) {
            const decide = deciders.get(contender.id)!;
            await measureCell(decide, concurrency, keyCount, options.warmUpMs);
            await resetRedisStats(admin);
            const redisCpuBeforeMs = await redisCpuMs(admin);
            const nodeCpuBefore = process.cpuUsage();
            const result = await measureCell(decide, concurrency, keyCount, options.cellMs);
            const nodeCpu = process.cpuUsage(nodeCpuBefore);
            const calls = result.calls + result.errors;
            result.redisCpuUsPerCall = ((await redisCpuMs(admin)) - redisCpuBeforeMs) * 1000 / calls;
            result.nodeCpuUsPerCall = (nodeCpu.user + nodeCpu.system) / calls;
            result.redisUsPerCall = (await redisUsec(admin)) / calls;
            const id = cellId(keyCount, concurrency, contender);
            const best = results.get(id);
            if (!best || result.perSecond > best.perSecond) results.set(id, result);
            progress(
              `r${round} ${String(keyCount).padStart(5)} keys  c=${String(concurrency).padStart(3)}  ${contender.label.padEnd(48)} ${Math.round(result.perSecond).toString().padStart(7)}/s  p50 ${result.p50Ms.toFixed(2)}  p99 ${result.p99Ms.toFixed(2)}  redis script ${fixed(result.redisUsPerCall, 1)} µs  cpu node ${fixed(result.nodeCpuUsPerCall, 1)} + redis ${fixed(result.redisCpuUsPerCall, 1)} µs${result.errors ? `  errors ${result.errors}` : ""}`,
            );
          }
        }
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
