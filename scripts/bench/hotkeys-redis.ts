/**
 * npm run bench:hotkeys-redis: one hot key on one real Redis. First one Node process without
 * LocalCache, as many decisions as its callers can get from Redis (every decision a store
 * call); then two processes with a LocalCache each, offered twice that rate between them,
 * under the key's limit and twice over it. The processes are test/redis/fixtures/hot-key-client.ts
 * (the fixture of test/redis/local-cache-processes.test.ts); Redis's own INFO commandstats
 * counts the store calls. Writes "Hot keys on real Redis" into BENCHMARKS.md (`--no-write`: print only).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { type HotKeyClient, runHotKey, startHotKeyClients, summarize, type WindowSummary } from "../../test/redis/hot-key-processes.js";
import { startBenchRedis } from "../redis-server.js";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 5000);
const CALLERS = 64;
const WINDOW_MS = 1000;
const SHARE = 0.1;

const redisServer = await startBenchRedis();
const redis = new Redis(redisServer.url);
let clients: HotKeyClient[] = [];

const policy = (limit: number) => ({ name: "hot", algorithm: "fixed-window", limit, period: "1s", local: { share: SHARE } });

async function measure(label: string, limit: number, jobs: Parameters<typeof runHotKey>[2]): Promise<{ label: string; limit: number; offered: string; summary: WindowSummary }> {
  const run = await runHotKey(clients.slice(0, jobs.length), redis, jobs, { alignMs: WINDOW_MS });
  const summary = summarize(run, limit, WINDOW_MS);
  if (summary.errors > 0) throw new Error(`${label}: ${summary.errors} decisions failed`);
  const offered = jobs[0]!.callers !== undefined ? `${jobs.length} × ${jobs[0]!.callers} callers, closed loop` : `${jobs.length} × ${Math.round(jobs[0]!.ratePerSec!).toLocaleString("en-US")}/s`;
  console.log(label, JSON.stringify(summary));
  return { label, limit, offered, summary };
}

let rows: Awaited<ReturnType<typeof measure>>[];
try {
  clients = await startHotKeyClients(redisServer.url, 2);
  // One key per row, the same in both processes.
  const runId = Date.now().toString(36);
  const key = (name: string) => `${name}:${runId}`;
  // A limit no run reaches: every decision is an admission Redis has to count.
  const unreachable = 100_000_000;
  const alone = await measure("1 process, no LocalCache", unreachable, [
    { key: key("alone"), policy: policy(unreachable), cached: false, callers: CALLERS, durationMs: DURATION_MS, windowMs: WINDOW_MS },
  ]);
  const both = await measure("2 processes, no LocalCache", unreachable, [
    { key: key("both"), policy: policy(unreachable), cached: false, callers: CALLERS, durationMs: DURATION_MS, windowMs: WINDOW_MS },
    { key: key("both"), policy: policy(unreachable), cached: false, callers: CALLERS, durationMs: DURATION_MS, windowMs: WINDOW_MS },
  ]);
  const ratePerSec = alone.summary.decisionsPerSec;
  const paced = (name: string, limit: number) => ({ key: key(name), policy: policy(limit), cached: true, ratePerSec, durationMs: DURATION_MS, windowMs: WINDOW_MS });
  const underLimit = Math.round(4 * ratePerSec);
  const under = await measure("2 processes with LocalCache, under the limit", underLimit, [paced("under", underLimit), paced("under", underLimit)]);
  const overLimit = Math.round(ratePerSec);
  const over = await measure("2 processes with LocalCache, 2× over the limit", overLimit, [paced("over", overLimit), paced("over", overLimit)]);
  rows = [alone, both, under, over];
} finally {
  await Promise.all(clients.map((client) => client.stop()));
  redis.disconnect();
  await redisServer.stop();
}

const count = (value: number) => Math.round(value).toLocaleString("en-US");
// Two significant digits below 0.01: a deny cache's ratio would print as 0.0000.
const ratio = (value: number) => (value >= 0.01 ? value.toFixed(4) : value.toPrecision(2));
const table = [
  "| processes | limit (fixed-window / 1 s) | offered | decisions/s | decisions | store calls / decision | over-admitted | worst under-admission per window | whole windows (at the limit) |",
  "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
  ...rows.map(({ label, limit, offered, summary: s }) =>
    `| ${label} | ${count(limit)} | ${offered} | ${count(s.decisionsPerSec)} | ${count(s.decisions)} | ${ratio(s.storeCallsPerDecision)} | ${s.overAdmitted} | ${count(s.worstUnderAdmitted)} (${((100 * s.worstUnderAdmitted) / limit).toFixed(2)} %) | ${s.wholeWindows} (${s.fullWindows}) |`,
  ),
].join("\n");
const [alone, , under, over] = rows;
const times = (row: (typeof rows)[number]) => (row.summary.decisionsPerSec / alone!.summary.decisionsPerSec).toFixed(2);
const verdict = `Two processes with LocalCache decided ${times(under!)}× (under the limit) and ${times(over!)}× (2× over it) what one process decided through Redis alone, with ${ratio(under!.summary.storeCallsPerDecision)} and ${ratio(over!.summary.storeCallsPerDecision)} store calls per decision and ${under!.summary.overAdmitted + over!.summary.overAdmitted} over-admitted.`;
console.log(`\n${table}\n\n${verdict}`);

const section = `## Hot keys on real Redis (bench:hotkeys-redis)

\`npm run bench:hotkeys-redis\`: one hot key, ${redisServer.description}, Node processes on the same
${availableParallelism()} cores (\`test/redis/fixtures/hot-key-client.ts\`, the fixture of the real-Redis LocalCache test), ${DURATION_MS / 1000} s per row,
starting at a window's start. First one process without LocalCache, ${CALLERS} callers each asking again as soon as
answered: what one process gets from Redis; then the same in two processes, which get no more
(Redis and the Node clients' socket work already fill the cores). Then two processes, each with its own \`LocalCache\` (share ${SHARE}),
each offered that same rate (open loop, issued every millisecond): twice the first row between them, once
under the key's limit and once twice over it. Store calls are Redis's own count (INFO commandstats: FCALL and
EVALSHA) over the run. Decisions are timed from the ask to the answer on the machine's one clock, which Redis's
TIME reads too: "over-admitted" sums, over every window, the admissions certainly decided in it beyond its limit;
"under-admission" is the most a window wholly inside the run admitted below what an exact limiter would have
(the smaller of its demand and its limit; an admission whose span crosses the window's edge is credited to it), as
a share of the limit. The bound (README, "Hot keys") is 2 × share × limit per window. The machine is shared:
the first row moved between about 130,000 and 220,000 decisions/s from run to run, and the others with it.

${table}

${verdict}
`;

if (!process.argv.includes("--no-write")) {
  const path = fileURLToPath(new URL("../../BENCHMARKS.md", import.meta.url));
  const current = readFileSync(path, "utf8");
  // Our own section, else right after bench:hotkeys's (whose script rewrites only its own).
  let start = current.search(/^## Hot keys on real Redis/m);
  let end = start;
  if (start >= 0) {
    const next = current.slice(start + 1).search(/^## /m);
    end = next < 0 ? current.length : start + 1 + next;
  } else {
    const simulated = current.search(/^## Hot keys \(bench:hotkeys\)/m);
    const next = simulated < 0 ? -1 : current.slice(simulated + 1).search(/^## /m);
    start = end = simulated < 0 || next < 0 ? current.length : simulated + 1 + next;
  }
  const before = current.slice(0, start).trimEnd();
  const after = current.slice(end);
  writeFileSync(path, `${before}\n\n${section}${after ? `\n${after}` : ""}`);
  console.log("written to BENCHMARKS.md");
}
