// bench:gateway's table writer: the rows' labels, the Markdown tables, and the goals read from the rows and the paired rounds.
import type { WrkResult } from "./wrk.js";
import { PAIRED_SECONDS } from "./gateway-servers.js";
import type { NodeRow, Paired, Row } from "./gateway-rounds.js";

export function table(rows: Row[], baselineLabel: string): string[] {
  const baseline = rows.find((r) => r.label === baselineLabel)?.result;
  const lines = ["| path | req/s | p50 ms | p99 ms | vs bare proxy | errors | non-200 |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"];
  for (const { label, result, skipped } of rows) {
    if (!result) {
      lines.push(`| ${label} | — | — | — | — | — | skipped: ${skipped} |`);
      continue;
    }
    const non200 = Object.entries(result.statuses).filter(([status]) => status !== "200").reduce((sum, [, n]) => sum + n, 0);
    const ratio = baseline ? (result.perSecond / baseline.perSecond).toFixed(2) : "—";
    lines.push(`| ${label} | ${Math.round(result.perSecond)} | ${result.p50Ms.toFixed(2)} | ${result.p99Ms.toFixed(2)} | ${ratio} | ${result.errors} | ${non200} |`);
  }
  return lines;
}

export const cpuMicros = (result: WrkResult) => (result.cpuSeconds / Math.max(1, result.requests)) * 1e6;

export const LABELS = {
  origin: "origin, direct",
  nginx: "nginx `limit_req` proxy, 1 worker",
  minimal: "minimal node:http proxy",
  fastify: "fastify 5 + @fastify/http-proxy + @fastify/rate-limit",
  memory: "`spillway serve` gateway, memory store",
  twin: "the same, a second process (the method's noise)",
  counted: "`spillway serve` gateway, memory store, every answer counted (peek, then debit)",
  overridden: "`spillway serve` gateway, memory store, 1,000 overrides configured (one matches)",
  redis: "`spillway serve` gateway, Redis",
  redisWorkers: "`spillway serve` gateway, Redis, `--workers 2`",
};

export function nodeTable(rows: NodeRow[]): string[] {
  const of = (label: string) => rows.find((r) => r.label === label)?.result;
  const minimal = of(LABELS.minimal);
  const fastify = of(LABELS.fastify);
  const ratio = (value: number | undefined, base: number | undefined) => (value !== undefined && base ? (value / base).toFixed(2) : "—");
  const lines = [
    "| path | req/s | p50 ms | p99 ms | proxy CPU µs/request | req/s vs minimal proxy | req/s vs fastify | CPU vs minimal proxy | errors + non-2xx |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const { label, result, skipped } of rows) {
    if (!result) {
      lines.push(`| ${label} | — | — | — | — | — | — | — | ${skipped} |`);
      continue;
    }
    const cpu = cpuMicros(result);
    lines.push(
      `| ${label} | ${Math.round(result.perSecond)} | ${result.p50Ms.toFixed(2)} | ${result.p99Ms.toFixed(2)} | ${cpu.toFixed(0)} | ${ratio(result.perSecond, minimal?.perSecond)} | ${ratio(result.perSecond, fastify?.perSecond)} | ${ratio(cpu, minimal && cpuMicros(minimal))} | ${result.errors + result.non2xx} |`,
    );
  }
  return lines;
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? Number.NaN;
const spread = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;

/** The counted goal: a response-counted route (a peek before, a debit after) within 5% of a plain one's req/s. */
export function countedGoal(rows: NodeRow[], paired: Paired | undefined): string[] {
  const plain = rows.find((r) => r.label === LABELS.memory)?.result;
  const counted = rows.find((r) => r.label === LABELS.counted)?.result;
  if (!paired) return [`- ${LABELS.counted}: not measured.`];
  const ratio = median(paired.counted);
  return [
    `- ${LABELS.counted}, loaded at the same time as a plain route's server of its own (${paired.counted.length} paired rounds of ${PAIRED_SECONDS} s): median ${ratio.toFixed(3)}× the plain route's req/s (rounds ${spread(paired.counted)}; goal ≥ 0.95: ${ratio >= 0.95 ? "met" : "**not met**"}).`,
    `- The same pairing of the plain route with a second process of itself: median ${median(paired.twin).toFixed(3)}× (rounds ${spread(paired.twin)}): the method's noise.`,
    ...(plain && counted ? [`- In the interleaved table above: ${(counted.perSecond / plain.perSecond).toFixed(3)}× the plain route's req/s, ${(cpuMicros(counted) / cpuMicros(plain)).toFixed(2)}× its CPU per request.`] : []),
  ];
}

/** The overrides goal: a route with overrides configured within 3% of one without. */
export function overridesGoal(rows: NodeRow[], paired: Paired | undefined): string[] {
  const plain = rows.find((r) => r.label === LABELS.memory)?.result;
  const overridden = rows.find((r) => r.label === LABELS.overridden)?.result;
  if (!paired) return [`- ${LABELS.overridden}: not measured.`];
  const ratio = median(paired.overridden);
  return [
    `- ${LABELS.overridden}, paired with a plain route's server of its own as above: median ${ratio.toFixed(3)}× its req/s (rounds ${spread(paired.overridden)}; goal ≥ 0.97: ${ratio >= 0.97 ? "met" : "**not met**"}).`,
    ...(plain && overridden ? [`- In the interleaved table above: ${(overridden.perSecond / plain.perSecond).toFixed(3)}× the plain route's req/s, ${(cpuMicros(overridden) / cpuMicros(plain)).toFixed(2)}× its CPU per request.`] : []),
  ];
}

/** The goals against the proxies, checked on this run's medians. */
export function goals(rows: NodeRow[]): string[] {
  const of = (label: string) => rows.find((r) => r.label === label)?.result;
  const minimal = of(LABELS.minimal);
  const fastify = of(LABELS.fastify);
  if (!minimal || !fastify) return ["Goals not checked: the minimal proxy or fastify row is missing."];
  return [LABELS.memory, LABELS.redis].map((label) => {
    const row = of(label);
    if (!row) return `- ${label}: not measured.`;
    const throughput = row.perSecond / minimal.perSecond;
    const vsFastify = row.perSecond / fastify.perSecond;
    const cpu = cpuMicros(row) / cpuMicros(minimal);
    const mark = (ok: boolean) => (ok ? "met" : "**not met**");
    return `- ${label}: ${throughput.toFixed(2)}× the minimal proxy's req/s (goal ≥ 0.80: ${mark(throughput >= 0.8)}), ${vsFastify.toFixed(2)}× fastify's (goal ≥ 1.00: ${mark(vsFastify >= 1)}), ${cpu.toFixed(2)}× its CPU per request (goal ≤ 1.25: ${mark(cpu <= 1.25)}), p99 ${row.p99Ms.toFixed(2)} ms vs fastify's ${fastify.p99Ms.toFixed(2)} ms (${mark(row.p99Ms <= fastify.p99Ms)}).`;
  });
}

/** `--workers 2` against one process, both on Redis, on a machine whose 2 cores wrk, the origin and Redis share too. */
export function workersLine(rows: NodeRow[]): string[] {
  const one = rows.find((r) => r.label === LABELS.redis)?.result;
  const two = rows.find((r) => r.label === LABELS.redisWorkers)?.result;
  if (!one || !two) return ["`--workers 2`: not measured in this run."];
  return [
    `\`--workers 2\`: ${Math.round(two.perSecond)} req/s against ${Math.round(one.perSecond)} for one process on the same Redis, ${(two.perSecond / one.perSecond).toFixed(2)}×; p99 ${two.p99Ms.toFixed(2)} ms against ${one.p99Ms.toFixed(2)} ms. On this 2-core machine wrk, the origin and redis-server take much of the second core: a second worker only shares the cores they leave. Not measured here: a machine with cores to spare.`,
  ];
}
