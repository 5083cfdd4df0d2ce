// bench:gateway — requests per second and latency through the gateway, in one run:
//   Node:   straight to the origin · a bare Node proxy (same server and origin client, no
//           limiting) · `spillway serve --store memory` · `spillway serve --redis`
//   Worker: a proxy Worker without limiting · the Spillway Worker gateway (Durable Object per key),
//           both under `wrangler dev`
// The origin is examples/origin/server.mjs on loopback; every row sends GET /api/hello.
// BENCH_SERVE_BIN runs another build of the CLI (default bin/spillway.mjs).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startRedis } from "../redis-server.js";
import { type LoadResult, runLoad, waitForHttp, writeBenchmarkSection } from "./load.js";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TOKEN = "bench-token";
const PORTS = { origin: 8790, bare: 8791, memory: 8792, redis: 8793, workerBare: 8794, worker: 8795 };
// Two `wrangler dev` at once each need their own inspector port, else the second fails to bind.
const INSPECTOR_PORTS = { workerBare: 9294, worker: 9295 };
const ORIGIN_URL = `http://127.0.0.1:${PORTS.origin}`;
const children: ChildProcess[] = [];

/** `stdin: "pipe"` keeps the child's stdin open: `wrangler dev` may stop when its stdin closes. */
function start(command: string, args: string[], env: Record<string, string> = {}, stdin: "ignore" | "pipe" = "ignore"): ChildProcess {
  const child = spawn(command, args, { stdio: [stdin, "ignore", "pipe"], detached: true, env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...env } });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  // A missing binary is reported as a skipped row, not a crash.
  child.on("error", (error) => {
    stderr += String(error);
    child.emit("exit", -1);
  });
  (child as ChildProcess & { stderrTail: () => string }).stderrTail = () => stderr;
  children.push(child);
  return child;
}

const stderrOf = (child: ChildProcess) => (child as ChildProcess & { stderrTail?: () => string }).stderrTail?.() ?? "";

function stopAll(): void {
  for (const child of children) {
    if (!child.pid) continue;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

async function measure(url: string): Promise<LoadResult> {
  const options = { url: `${url}/api/hello`, method: "GET", concurrency: CONCURRENCY };
  await runLoad({ ...options, durationMs: 1500 }); // warm-up: JIT, sockets, isolates
  return runLoad({ ...options, durationMs: DURATION_MS });
}

/** Waits for a server, or explains why it never came: the row is then reported as skipped. */
async function ready(url: string, child: ChildProcess, timeoutMs = 30_000): Promise<string | undefined> {
  const exited = new Promise<string>((resolve) => child.once("exit", (code) => resolve(`exited with ${code}: ${stderrOf(child).trim().split("\n").slice(-2).join(" ")}`)));
  return Promise.race([waitForHttp(url, timeoutMs).then(() => undefined, (error: Error) => error.message), exited]);
}

async function writeConfig(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-"));
  const path = join(dir, "spillway.config.json");
  const config = {
    origin: ORIGIN_URL,
    // A limit no benchmark reaches: every request is decided and admitted.
    policies: [{ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
    routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["bench"] }],
  };
  await writeFile(path, JSON.stringify(config));
  return path;
}

type Row = { label: string; result?: LoadResult; skipped?: string };
type Target = { label: string; url: string; child?: ChildProcess; skip?: string };

/** Starts nothing: checks a target is up and really proxies, or says why it is skipped. */
async function probe(target: Target): Promise<string | undefined> {
  if (target.skip) return target.skip;
  const problem = target.child ? await ready(`${target.url}/healthz`, target.child) : undefined;
  if (problem) return problem;
  // A gateway that is not wired answers 404 for /api/*: that is no measurement.
  const response = await fetch(`${target.url}/api/hello`);
  return response.status === 200 ? undefined : `GET /api/hello answered ${response.status}`;
}

/**
 * Measures every target in ROUNDS interleaved rounds and keeps each one's median run: the
 * machine is shared, and one slow second must not decide a ratio.
 */
async function measureAll(targets: Target[]): Promise<Row[]> {
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

function table(rows: Row[], baselineLabel: string): string[] {
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

async function main(): Promise<void> {
  const configPath = await writeConfig();
  start("node", ["examples/origin/server.mjs", String(PORTS.origin)]);
  await waitForHttp(`${ORIGIN_URL}/api/hello`);

  const serve = (port: number, storeArgs: string[]) =>
    start("node", [process.env.BENCH_SERVE_BIN ?? "bin/spillway.mjs", "serve", "--config", configPath, "--port", String(port), ...storeArgs], { SPILLWAY_TOKEN: TOKEN });
  // No redis-server on the machine: the Redis row is skipped, the others still measured.
  const redis = await startRedis().catch((error: Error) => error);
  // /healthz is Spillway's; the bare proxy forwards it to the origin, which answers too.
  const nodeRows = await measureAll([
    { label: "origin, direct", url: ORIGIN_URL },
    { label: "bare Node proxy", url: `http://127.0.0.1:${PORTS.bare}`, child: start("tsx", ["scripts/bench/gateway-bare-proxy.ts", String(PORTS.bare), ORIGIN_URL]) },
    { label: "spillway serve, memory store", url: `http://127.0.0.1:${PORTS.memory}`, child: serve(PORTS.memory, ["--store", "memory"]) },
    redis instanceof Error
      ? { label: "spillway serve, Redis", url: "", skip: redis.message }
      : { label: "spillway serve, Redis", url: `http://127.0.0.1:${PORTS.redis}`, child: serve(PORTS.redis, ["--redis", redis.url]) },
  ]);
  if (!(redis instanceof Error)) await redis.stop();

  const wrangler = (config: string, port: number, inspectorPort: number) =>
    start(
      "wrangler",
      ["dev", "--config", config, "--port", String(port), "--inspector-port", String(inspectorPort), "--ip", "127.0.0.1", "--var", `ORIGIN_URL:${ORIGIN_URL}`, "--var", `SPILLWAY_TOKEN:${TOKEN}`, "--log-level", "error"],
      {},
      "pipe",
    );
  const workerRows = await measureAll([
    { label: "proxy Worker, no limiting", url: `http://127.0.0.1:${PORTS.workerBare}`, child: wrangler("scripts/bench/wrangler.gateway-bare.toml", PORTS.workerBare, INSPECTOR_PORTS.workerBare) },
    { label: "Spillway Worker gateway (Durable Object)", url: `http://127.0.0.1:${PORTS.worker}`, child: wrangler("scripts/bench/wrangler.gateway.toml", PORTS.worker, INSPECTOR_PORTS.worker) },
  ]);

  const nodeLines = table(nodeRows, "bare Node proxy");
  const workerLines = table(workerRows, "proxy Worker, no limiting");
  const memory = nodeRows.find((r) => r.label === "spillway serve, memory store")?.result;
  const bareResult = nodeRows.find((r) => r.label === "bare Node proxy")?.result;
  const goal = memory && bareResult ? `Goal: the Node gateway keeps ≥ 80% of a bare proxy's throughput — this run: ${Math.round((memory.perSecond / bareResult.perSecond) * 100)}% (memory store).` : "Goal: the Node gateway keeps ≥ 80% of a bare proxy's throughput (not measured in this run).";
  const markdown = [
    `\`npm run bench:gateway\`: GET /api/hello through each path to a local origin (examples/origin/server.mjs), ${CONCURRENCY} requests in flight on keep-alive sockets, ${DURATION_MS / 1000} s per run after a 1.5 s warm-up, ${ROUNDS} interleaved rounds, the median run shown.`,
    "Every gateway request is matched to a route, keyed by client address and decided by a GCRA policy it never exceeds, so every row answers 200.",
    "The bare proxy is the same server and origin client with the limiting taken out (scripts/bench/gateway-bare-proxy.ts, gateway-bare-worker.ts).",
    "Load generator, origin and proxies share one 2-core machine: read the ratios, not the absolute numbers.",
    "",
    "### Node",
    "",
    ...nodeLines,
    "",
    goal,
    "",
    "### Worker (`wrangler dev`, local workerd)",
    "",
    ...workerLines,
  ].join("\n");
  console.log(`\n${markdown}`);
  await writeBenchmarkSection("Gateway (bench:gateway)", markdown);
  console.log("\nwritten to BENCHMARKS.md");
}

process.on("SIGINT", () => {
  stopAll();
  process.exit(130);
});
try {
  await main();
} finally {
  stopAll();
}
