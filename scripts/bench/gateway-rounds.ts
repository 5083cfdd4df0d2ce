// bench:gateway's rounds: the interleaved rounds each target's median run is kept from, and the paired rounds of two servers loaded at once.
import type { ChildProcess } from "node:child_process";
import { availableParallelism } from "node:os";
import { type LoadResult, runLoad } from "./load.js";
import { type WrkResult, runWrk } from "./wrk.js";
import { CONCURRENCY, DURATION_MS, PAIRED_ROUNDS, PAIRED_SECONDS, ROUNDS, type Target, pinCpu, probe } from "./gateway-servers.js";
import { cpuMicros } from "./gateway-table.js";

export type Row = { label: string; result?: LoadResult; skipped?: string };
export type NodeRow = { label: string; result?: WrkResult; skipped?: string };

async function measure(url: string): Promise<LoadResult> {
  const options = { url: `${url}/api/hello`, method: "GET", concurrency: CONCURRENCY };
  await runLoad({ ...options, durationMs: 1500 }); // warm-up: JIT, sockets, isolates
  return runLoad({ ...options, durationMs: DURATION_MS });
}

/**
 * Measures every target in ROUNDS interleaved rounds and keeps each one's median run: the
 * machine is shared, and one slow second must not decide a ratio.
 */
export async function measureAll(targets: Target[]): Promise<Row[]> {
  const skipped = new Map<string, string>();
  for (const target of targets) {
    const problem = await probe(target);
    if (problem) skipped.set(target.label, problem);
  }
  const runs = new Map<string, LoadResult[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of targets) {
      if (skipped.has(target.label)) continue;
      const result = await measure(target.url);
      runs.set(target.label, [...(runs.get(target.label) ?? []), result]);
      console.log(`round ${round}, ${target.label}: ${Math.round(result.perSecond)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms`);
    }
  }
  return targets.map(({ label }) => {
    const sorted = (runs.get(label) ?? []).sort((a, b) => a.perSecond - b.perSecond);
    return sorted.length ? { label, result: sorted[Math.floor(sorted.length / 2)] } : { label, skipped: skipped.get(label) };
  });
}

/** The Node rows: ROUNDS interleaved rounds of wrk, each target's median run kept. */
export async function measureNode(targets: Target[]): Promise<NodeRow[]> {
  const skipped = new Map<string, string>();
  for (const target of targets) {
    const problem = await probe(target);
    if (problem) skipped.set(target.label, problem);
  }
  const runs = new Map<string, WrkResult[]>();
  const seconds = Math.round(DURATION_MS / 1000);
  for (let round = 1; round <= ROUNDS; round++) {
    for (const target of targets) {
      if (skipped.has(target.label)) continue;
      const url = `${target.url}/api/hello`;
      await runWrk(url, CONCURRENCY, 2); // warm-up: JIT, sockets
      const result = await runWrk(url, CONCURRENCY, seconds, target.child?.pid);
      runs.set(target.label, [...(runs.get(target.label) ?? []), result]);
      console.log(`round ${round}, ${target.label}: ${Math.round(result.perSecond)} req/s, p50 ${result.p50Ms.toFixed(2)} ms, p99 ${result.p99Ms.toFixed(2)} ms, ${cpuMicros(result).toFixed(0)} µs CPU/request`);
    }
  }
  return targets.map(({ label }) => {
    const sorted = (runs.get(label) ?? []).sort((x, y) => x.perSecond - y.perSecond);
    return sorted.length ? { label, result: sorted[Math.floor(sorted.length / 2)] } : { label, skipped: skipped.get(label) };
  });
}

/**
 * Two servers loaded at the same moment, each by its own wrk (-c CONCURRENCY): whatever else the
 * machine does falls on both alike, where turns a few seconds apart saw ±15% between rounds.
 * With `loadCpu` the wrks run there, while the two servers share another CPU (pinCpu): the
 * scheduler splits that one evenly, so the cheaper server answers more, in proportion.
 * Answers b's req/s ÷ a's.
 */
async function pairedRatio(a: string, b: string, seconds: number, bFirst = false, loadCpu?: number): Promise<number> {
  const run = (url: string) => runWrk(`${url}/api/hello`, CONCURRENCY, seconds, undefined, loadCpu);
  // Which wrk starts first alternates between calls: neither server keeps a head start.
  const [first, second] = bFirst ? await Promise.all([run(b), run(a)]).then(([y, x]) => [x, y]) : await Promise.all([run(a), run(b)]);
  return second!.perSecond / first!.perSecond;
}

export type PairingName = "twin" | "counted" | "overridden";

/**
 * One comparison of the paired rounds: `measured` against a plain server of its own (`partner`),
 * loaded only with it. A plain server shared by every pairing is loaded all the time while the
 * others rest between their turns, and that alone read three identical plain servers at 0.71 to
 * 0.75 of it on a busy machine; partners of their own read 0.99 to 1.02 (BENCHMARKS.md).
 */
export interface Pairing {
  name: PairingName;
  partner: { url: string; child: ChildProcess };
  measured: { url: string; child: ChildProcess };
  /** Whose build: this run's, or BENCH_COMPARE_BIN's. */
  build: string;
}

export interface Paired {
  /** The plain route against a second process of the same build and config: the method's own noise. */
  twin: number[];
  counted: number[];
  overridden: number[];
}


/**
 * The paired rounds of the counted and overrides goals, once the interleaved rows are measured (their
 * servers still run): each build's pairings (this one's, then BENCH_COMPARE_BIN's) take turns.
 * Answers each build's ratios, and whether the processes could be pinned.
 */
export async function measurePaired(builds: Pairing[][], origin: ChildProcess): Promise<{ paired: Map<string, Paired>; pinned: boolean }> {
  const pairings = builds.flat();
  for (const server of pairings.flatMap((pairing) => [pairing.partner, pairing.measured])) {
    const problem = await probe({ label: server.url, ...server });
    if (problem) throw new Error(`bench:gateway: ${server.url}: ${problem}`);
  }
  // The servers measured share CPU 0; wrk and the origin get the last CPU (a machine with one CPU: no pinning).
  const loadCpu = availableParallelism() > 1 ? availableParallelism() - 1 : undefined;
  let pinned = false;
  if (loadCpu !== undefined) {
    const servers = pairings.flatMap((pairing) => [pairing.partner.child, pairing.measured.child]).every((child) => pinCpu(child.pid, 0));
    pinned = servers && pinCpu(origin.pid, loadCpu);
  }
  const load = pinned ? loadCpu : undefined;
  // Warm-up, pinned, each pairing as long as a measured run: a process just moved to another
  // CPU ran slower for a while (a twin's first paired rounds read 0.68, then rose to 0.92).
  for (const pairing of pairings) await pairedRatio(pairing.partner.url, pairing.measured.url, DURATION_MS / 1000, false, load);
  const paired = new Map(builds.map((pairs) => [pairs[0]!.build, { twin: [], counted: [], overridden: [] } as Paired]));
  // The pairings take turns (a build's beside the other's), so the machine's drift falls on all.
  const byName = (name: PairingName) => pairings.filter((pairing) => pairing.name === name);
  const order = [...byName("twin"), ...byName("counted"), ...byName("overridden")];
  for (let round = 0; round < PAIRED_ROUNDS; round++) {
    const bFirst = round % 2 === 1;
    for (const pairing of order) paired.get(pairing.build)![pairing.name].push(await pairedRatio(pairing.partner.url, pairing.measured.url, PAIRED_SECONDS, bFirst, load));
  }
  const listed = (ratios: number[]) => ratios.map((r) => r.toFixed(2)).join(" ");
  for (const [build, ratios] of paired) console.log(`paired rounds (${build}): twin ${listed(ratios.twin)}; counted ${listed(ratios.counted)}; overrides ${listed(ratios.overridden)}`);
  return { paired, pinned };
}
