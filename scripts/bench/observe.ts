// bench:observe — what metrics, the heavy-hitters sketch and the live stats cost `spillway serve`:
// one run, two servers on the memory store, the same config, one with observation on (the
// default) and one with --no-metrics. Rounds alternate which server goes first, so drift in the
// machine's load falls on both alike, and the figure is the median of each round's on/off
// ratio: on a shared machine, a neighbour's burst moves whole rounds, not one ratio. Two loads: POST /v1/check (decisions/s) and a gateway
// route to a local origin (req/s). Every request is admitted: a denial also writes a log line,
// whose cost is the log's, not the metrics'.
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type LoadResult, mergeLoads, runLoad, waitForHttp, writeBenchmarkSection } from "./load.js";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 2000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 12);
const TOKEN = "bench-token";
const PORTS = { origin: 8796, on: 8797, off: 8798 };
const children: ChildProcess[] = [];

function start(args: string[]): ChildProcess {
  const child = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"], detached: true, env: { ...process.env, SPILLWAY_TOKEN: TOKEN } });
  children.push(child);
  return child;
}

function stopAll(): void {
  for (const child of children) if (child.pid) process.kill(-child.pid, "SIGTERM");
}

const loads = {
  check: (port: number) => ({
    url: `http://127.0.0.1:${port}/v1/check`,
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
    body: (i: number) => ({ key: `user-${i % 10_000}`, policy: "roomy" }),
  }),
  gateway: (port: number) => ({ url: `http://127.0.0.1:${port}/api/hello`, method: "GET" }),
};

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-observe-"));
  const configPath = join(dir, "spillway.config.json");
  const config = {
    origin: `http://127.0.0.1:${PORTS.origin}`,
    policies: [{ name: "roomy", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
    routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["roomy"] }],
  };
  await writeFile(configPath, JSON.stringify(config));
  start(["examples/origin/server.mjs", String(PORTS.origin)]);
  const serve = (port: number, extra: string[]) => start(["bin/spillway.mjs", "serve", "--config", configPath, "--store", "memory", "--port", String(port), ...extra]);
  serve(PORTS.on, []);
  serve(PORTS.off, ["--no-metrics"]);
  await Promise.all([PORTS.origin, PORTS.on, PORTS.off].map((port) => waitForHttp(`http://127.0.0.1:${port}/healthz`)));

  const results: Record<"check" | "gateway", Record<"on" | "off", LoadResult[]>> = { check: { on: [], off: [] }, gateway: { on: [], off: [] } };
  for (const load of ["check", "gateway"] as const) {
    for (const variant of ["on", "off"] as const) await runLoad({ ...loads[load](PORTS[variant]), concurrency: CONCURRENCY, durationMs: 1500 }); // warm-up
  }
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (["on", "off"] as const) : (["off", "on"] as const);
    for (const load of ["check", "gateway"] as const) {
      for (const variant of order) {
        const result = await runLoad({ ...loads[load](PORTS[variant]), concurrency: CONCURRENCY, durationMs: DURATION_MS });
        if (result.errors > 0 || Object.keys(result.statuses).some((status) => status !== "200")) throw new Error(`${load} ${variant}: ${JSON.stringify(result.statuses)}, ${result.errors} errors`);
        results[load][variant].push(result);
        console.log(`round ${round + 1} ${load} metrics ${variant}: ${Math.round(result.perSecond)}/s`);
      }
    }
  }

  const rows = (["check", "gateway"] as const).map((load) => {
    const on = mergeLoads(results[load].on);
    const off = mergeLoads(results[load].off);
    const ratios = results[load].on.map((result, i) => result.perSecond / results[load].off[i]!.perSecond).sort((a, b) => a - b);
    const ratio = ratios[Math.floor(ratios.length / 2)]!;
    const label = load === "check" ? "POST /v1/check (decisions/s)" : "gateway GET /api/hello (req/s)";
    return `| ${label} | ${Math.round(off.perSecond)} | ${Math.round(on.perSecond)} | ${(ratio * 100).toFixed(1)} % | ${((1 - ratio) * 100).toFixed(1)} % | ${off.p99Ms.toFixed(2)} / ${on.p99Ms.toFixed(2)} |`;
  });
  const markdown = `\`npm run bench:observe\`: two \`spillway serve --store memory\` on one config, with observation (Prometheus
metrics, the denied-keys sketch, /v1/stats counters: the default) and with \`--no-metrics\`; ${ROUNDS} rounds of ${DURATION_MS / 1000} s
per load and server, alternating which server goes first (the ratio is the median of the rounds' ratios; the rates are the
totals), ${CONCURRENCY} connections, the load generator on the same 2 cores. Every
request is admitted (a denial also costs a log line). The machine is shared: single rounds swing by tens of percent
either way, so only the median of the paired ratios means anything, and it moves by a point or two between runs.

| load | --no-metrics | metrics on | on / off (median of rounds) | cost | p99 ms off / on |
|---|---|---|---|---|---|
${rows.join("\n")}`;
  console.log(markdown);
  await writeBenchmarkSection("Observability cost (bench:observe)", markdown);
}

main()
  .catch((error: unknown) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(stopAll);
