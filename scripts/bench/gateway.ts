// bench:gateway — requests per second, latency and the proxy's CPU per request, in one
// interleaved run with wrk (-t1 -c32) as the load generator:
//   straight to the origin · nginx `limit_req` (one worker; "not installed" without nginx) · a
//   minimal node:http proxy (minimal-proxy.mjs) · fastify + @fastify/http-proxy +
//   @fastify/rate-limit (fastify-proxy.mjs) · `spillway serve --store memory` · `--redis`.
// BENCH_WORKER=1 also measures the Worker rows (under `wrangler dev`), in their own section.
// The origin is examples/origin/server.mjs on loopback; every row sends GET /api/hello.
// BENCH_SERVE_BIN runs another build of the CLI (default bin/spillway.mjs). BENCH_COMPARE_BIN: the
// paired rounds also measure that build's pairings, turn about with this one's (a before and after
// in one run). BENCH_PAIRED_ONLY=1 runs the paired rounds alone and writes nothing.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { startRedis } from "../redis-server.js";
import { type LoadResult, runLoad, waitForHttp, writeBenchmarkSection } from "./load.js";
import { type WrkResult, runWrk } from "./wrk.js";

const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const TOKEN = "bench-token";
const PORTS = { origin: 8790, minimal: 8791, memory: 8792, redis: 8793, workerBare: 8794, worker: 8795, fastify: 8796, nginx: 8797, counted: 8798, overridden: 8799, memoryTwin: 8800, redisWorkers: 8801, countedPartner: 8802, overriddenPartner: 8803 };
/** BENCH_COMPARE_BIN's servers: the same pairings, each port this far up. */
const COMPARE_PORT_OFFSET = 100;
const COMPARE_BIN = process.env.BENCH_COMPARE_BIN;
const PAIRED_ONLY = process.env.BENCH_PAIRED_ONLY === "1";
/** Paired rounds for the goals that compare two of our own rows (issues 24, 25): both loaded at once. */
const PAIRED_ROUNDS = Number(process.env.BENCH_PAIRED_ROUNDS ?? 9);
const PAIRED_SECONDS = 3;
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

/** `route` adds fields to the bench's one route (the counted row's `count`); `top` to the file (overrides). */
async function writeConfig(route: Record<string, unknown> = {}, top: Record<string, unknown> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-"));
  const path = join(dir, "spillway.config.json");
  const config = {
    origin: ORIGIN_URL,
    // A limit no benchmark reaches: every request is decided and admitted.
    policies: [{ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
    routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["bench"], ...route }],
    ...top,
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

type NodeRow = { label: string; result?: WrkResult; skipped?: string };

/** The Node rows: ROUNDS interleaved rounds of wrk, each target's median run kept. */
async function measureNode(targets: Target[]): Promise<NodeRow[]> {
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

const cpuMicros = (result: WrkResult) => (result.cpuSeconds / Math.max(1, result.requests)) * 1e6;

const LABELS = {
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

function nodeTable(rows: NodeRow[]): string[] {
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

type PairingName = "twin" | "counted" | "overridden";

/**
 * One comparison of the paired rounds: `measured` against a plain server of its own (`partner`),
 * loaded only with it. A plain server shared by every pairing is loaded all the time while the
 * others rest between their turns, and that alone read three identical plain servers at 0.71 to
 * 0.75 of it on a busy machine; partners of their own read 0.99 to 1.02 (BENCHMARKS.md).
 */
interface Pairing {
  name: PairingName;
  partner: { url: string; child: ChildProcess };
  measured: { url: string; child: ChildProcess };
  /** Whose build: this run's, or BENCH_COMPARE_BIN's. */
  build: string;
}

interface Paired {
  /** The plain route against a second process of the same build and config: the method's own noise. */
  twin: number[];
  counted: number[];
  overridden: number[];
}

const median = (values: number[]) => [...values].sort((x, y) => x - y)[Math.floor(values.length / 2)] ?? Number.NaN;
const spread = (values: number[]) => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`;

/** Issue 24's goal: a response-counted route (a peek before, a debit after) within 5% of a plain one's req/s. */
function countedGoal(rows: NodeRow[], paired: Paired | undefined): string[] {
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

/** Issue 25's goal: a route with overrides configured within 3% of one without. */
function overridesGoal(rows: NodeRow[], paired: Paired | undefined): string[] {
  const plain = rows.find((r) => r.label === LABELS.memory)?.result;
  const overridden = rows.find((r) => r.label === LABELS.overridden)?.result;
  if (!paired) return [`- ${LABELS.overridden}: not measured.`];
  const ratio = median(paired.overridden);
  return [
    `- ${LABELS.overridden}, paired with a plain route's server of its own as above: median ${ratio.toFixed(3)}× its req/s (rounds ${spread(paired.overridden)}; goal ≥ 0.97: ${ratio >= 0.97 ? "met" : "**not met**"}).`,
    ...(plain && overridden ? [`- In the interleaved table above: ${(overridden.perSecond / plain.perSecond).toFixed(3)}× the plain route's req/s, ${(cpuMicros(overridden) / cpuMicros(plain)).toFixed(2)}× its CPU per request.`] : []),
  ];
}

/** The goals of issue 15, checked on this run's medians. */
function goals(rows: NodeRow[]): string[] {
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

/** Moves a process and all its threads to one CPU (taskset); false when that cannot be done. */
/** Issue 33: `--workers 2` against one process, both on Redis, on a machine whose 2 cores wrk, the origin and Redis share too. */
function workersLine(rows: NodeRow[]): string[] {
  const one = rows.find((r) => r.label === LABELS.redis)?.result;
  const two = rows.find((r) => r.label === LABELS.redisWorkers)?.result;
  if (!one || !two) return ["`--workers 2`: not measured in this run."];
  return [
    `\`--workers 2\` (issue 33): ${Math.round(two.perSecond)} req/s against ${Math.round(one.perSecond)} for one process on the same Redis, ${(two.perSecond / one.perSecond).toFixed(2)}×; p99 ${two.p99Ms.toFixed(2)} ms against ${one.p99Ms.toFixed(2)} ms. On this 2-core machine wrk, the origin and redis-server take much of the second core: a second worker only shares the cores they leave. Not measured here: a machine with cores to spare.`,
  ];
}

function pinCpu(pid: number | undefined, cpu: number): boolean {
  if (pid === undefined) return false;
  const result = spawnSync("taskset", ["-a", "-p", "-c", String(cpu), String(pid)], { stdio: "ignore" });
  return result.status === 0;
}

/**
 * The paired rounds of issue 24's and 25's goals, once the interleaved rows are measured (their
 * servers still run): each build's pairings (this one's, then BENCH_COMPARE_BIN's) take turns.
 * Answers each build's ratios, and whether the processes could be pinned.
 */
async function measurePaired(builds: Pairing[][], origin: ChildProcess): Promise<{ paired: Map<string, Paired>; pinned: boolean }> {
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

/** nginx with one worker, `limit_req` per client address at a rate no run reaches, keep-alive to the origin. */
async function nginxTarget(): Promise<Target> {
  const label = LABELS.nginx;
  const which = spawn("nginx", ["-v"], { stdio: "ignore" });
  const installed = await new Promise<boolean>((resolve) => {
    which.once("error", () => resolve(false));
    which.once("exit", (code) => resolve(code === 0));
  });
  if (!installed) return { label, url: "", skip: "not installed (apt-get install nginx)" };
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-nginx-"));
  const conf = `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  limit_req_zone $binary_remote_addr zone=per_ip:10m rate=100000000r/s;
  upstream origin { server 127.0.0.1:${PORTS.origin}; keepalive 64; }
  server {
    listen 127.0.0.1:${PORTS.nginx};
    location = /healthz { return 200; }
    location / { limit_req zone=per_ip burst=1000 nodelay; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://origin; }
  }
}
`;
  await writeFile(join(dir, "nginx.conf"), conf);
  return { label, url: `http://127.0.0.1:${PORTS.nginx}`, child: start("nginx", ["-p", dir, "-c", join(dir, "nginx.conf"), "-g", "daemon off;"]) };
}

/**
 * Refuses to start when one of the bench's ports already answers: a server left running there
 * (an origin, say) would be measured in place of the one this run starts, whose own start fails.
 */
async function takenPorts(): Promise<number[]> {
  const taken: number[] = [];
  const ports = Object.values(PORTS);
  if (COMPARE_BIN) ports.push(...ports.map((port) => port + COMPARE_PORT_OFFSET));
  for (const port of ports) {
    const answered = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (answered) taken.push(port);
  }
  return taken;
}

async function main(): Promise<void> {
  const taken = await takenPorts();
  if (taken.length > 0) {
    console.error(`bench:gateway: something already listens on 127.0.0.1 port ${taken.join(", ")} (a server left running?); nothing was measured`);
    process.exitCode = 1;
    return;
  }
  const configPath = await writeConfig();
  // Every answer (200) counted: each request is peeked, then debited when its head arrives.
  const countedConfigPath = await writeConfig({ count: { status: ["2xx"] } });
  // 999 wildcard overrides that never match, and the client's own address exact, all for the
  // route's key source (an override without a source applies to no route): every request is
  // resolved against the table and decided on the overridden limit.
  const overrides = [
    ...Array.from({ length: 999 }, (_, i) => ({ policy: "bench", source: "ip", key: `customer-${i}-*`, limit: 500_000_000 })),
    { policy: "bench", source: "ip", key: "127.0.0.1", limit: 999_999_999 },
  ];
  const overriddenConfigPath = await writeConfig({}, { overrides });
  const origin = start("node", ["examples/origin/server.mjs", String(PORTS.origin)]);
  await waitForHttp(`${ORIGIN_URL}/api/hello`);

  const serveWith = (bin: string, port: number, storeArgs: string[], config = configPath) =>
    start("node", [bin, "serve", "--config", config, "--port", String(port), ...storeArgs], { SPILLWAY_TOKEN: TOKEN });
  const bin = process.env.BENCH_SERVE_BIN ?? "bin/spillway.mjs";
  const serve = (port: number, storeArgs: string[], config = configPath) => serveWith(bin, port, storeArgs, config);
  const memory = ["--store", "memory"];
  const server = (child: ChildProcess, port: number) => ({ url: `http://127.0.0.1:${port}`, child });
  /** One build's three pairings: the plain route with its twin, and each of the others with a plain partner of its own. */
  const pairingsOf = (build: string, servers: Record<"plain" | "twin" | "counted" | "overridden" | "countedPartner" | "overriddenPartner", { url: string; child: ChildProcess }>): Pairing[] => [
    { name: "twin", partner: servers.plain, measured: servers.twin, build },
    { name: "counted", partner: servers.countedPartner, measured: servers.counted, build },
    { name: "overridden", partner: servers.overriddenPartner, measured: servers.overridden, build },
  ];
  const ours = {
    plain: server(serve(PORTS.memory, memory), PORTS.memory),
    twin: server(serve(PORTS.memoryTwin, memory), PORTS.memoryTwin),
    counted: server(serve(PORTS.counted, memory, countedConfigPath), PORTS.counted),
    overridden: server(serve(PORTS.overridden, memory, overriddenConfigPath), PORTS.overridden),
    countedPartner: server(serve(PORTS.countedPartner, memory), PORTS.countedPartner),
    overriddenPartner: server(serve(PORTS.overriddenPartner, memory), PORTS.overriddenPartner),
  };
  const builds = [pairingsOf(bin, ours)];
  if (COMPARE_BIN) {
    const at = (port: number, config = configPath) => server(serveWith(COMPARE_BIN, port + COMPARE_PORT_OFFSET, memory, config), port + COMPARE_PORT_OFFSET);
    builds.push(
      pairingsOf(COMPARE_BIN, {
        plain: at(PORTS.memory),
        twin: at(PORTS.memoryTwin),
        counted: at(PORTS.counted, countedConfigPath),
        overridden: at(PORTS.overridden, overriddenConfigPath),
        countedPartner: at(PORTS.countedPartner),
        overriddenPartner: at(PORTS.overriddenPartner),
      }),
    );
  }
  const memoryTargets: Target[] = [
    { label: LABELS.memory, ...ours.plain },
    { label: LABELS.twin, ...ours.twin },
    { label: LABELS.counted, ...ours.counted },
    { label: LABELS.overridden, ...ours.overridden },
  ];
  let nodeRows: NodeRow[] = [];
  if (!PAIRED_ONLY) {
    // No redis-server on the machine: the Redis row is skipped, the others still measured.
    const redis = await startRedis().catch((error: Error) => error);
    // /healthz is Spillway's; the other proxies forward it to the origin, which answers too.
    nodeRows = await measureNode([
      { label: LABELS.origin, url: ORIGIN_URL, child: origin },
      await nginxTarget(),
      { label: LABELS.minimal, url: `http://127.0.0.1:${PORTS.minimal}`, child: start("node", ["scripts/bench/minimal-proxy.mjs", String(PORTS.minimal), ORIGIN_URL]) },
      { label: LABELS.fastify, url: `http://127.0.0.1:${PORTS.fastify}`, child: start("node", ["scripts/bench/fastify-proxy.mjs", String(PORTS.fastify), ORIGIN_URL]) },
      ...memoryTargets,
      redis instanceof Error
        ? { label: LABELS.redis, url: "", skip: redis.message }
        : { label: LABELS.redis, url: `http://127.0.0.1:${PORTS.redis}`, child: serve(PORTS.redis, ["--redis", redis.url]) },
      // Two workers (node:cluster) on one port: wrk's connections are handed to them in turn.
      redis instanceof Error
        ? { label: LABELS.redisWorkers, url: "", skip: redis.message }
        : { label: LABELS.redisWorkers, url: `http://127.0.0.1:${PORTS.redisWorkers}`, child: serve(PORTS.redisWorkers, ["--redis", redis.url, "--workers", "2"]) },
    ]);
    if (!(redis instanceof Error)) await redis.stop();
  }
  const measuredAll = PAIRED_ONLY || memoryTargets.every(({ label }) => nodeRows.some((row) => row.label === label && row.result));
  const { paired: pairedByBuild, pinned } = measuredAll ? await measurePaired(builds, origin) : { paired: new Map<string, Paired>(), pinned: false };
  const paired = pairedByBuild.get(bin);
  const compared = COMPARE_BIN ? pairedByBuild.get(COMPARE_BIN) : undefined;
  if (PAIRED_ONLY) {
    for (const [build, ratios] of pairedByBuild) {
      console.log(`\n${build}:\n${[...countedGoal([], ratios), ...overridesGoal([], ratios)].join("\n")}`);
    }
    console.log("\nBENCH_PAIRED_ONLY: nothing written to BENCHMARKS.md");
    return;
  }

  const markdown = [
    `\`npm run bench:gateway\`: GET /api/hello through each path to a local origin (examples/origin/server.mjs), \`wrk -t1 -c${CONCURRENCY}\` on keep-alive connections, ${DURATION_MS / 1000} s per run after a 2 s warm-up, ${ROUNDS} interleaved rounds, the median run shown (Node ${process.version}).`,
    "Every gateway request is matched to a route, keyed by client address and decided by a GCRA policy it never exceeds (nginx and fastify: a per-address limit likewise never reached), so every row answers 200.",
    'The counted row\'s route adds `"count": { "status": ["2xx"] }`: every request is peeked before forwarding and debited when its answer\'s head arrives (two store operations where the plain route has one).',
    "The overrides row's config adds 1,000 `overrides` for its policy: 999 wildcards (`customer-N-*`) that never match and the client's address exact, all for the route's key source (`\"source\": \"ip\"`), so every request is resolved against the table and decided on the overridden limit.",
    `The goals that compare two of our own rows (issues 24 and 25) are read from paired rounds as well: the server measured and a plain route's server of its own loaded at the same moment, by a wrk each, for ${PAIRED_SECONDS} s; the plain route is also paired with a second process of itself, which shows the method's own noise; the pairings take turns, and each plain partner is loaded only in its own pairing's turns, as the server it is paired with is. ${pinned ? "In those rounds the servers measured share CPU 0 (taskset) while the wrks and the origin run on the other: each server gets half a CPU, so the ratio of their req/s is the inverse ratio of their CPU per request." : "The processes could not be pinned to CPUs (taskset) in this run: the paired rounds share all CPUs."}`,
    "Proxy CPU is the proxy's own processes' user + system time over the run (/proc, 10 ms ticks) divided by the requests it answered; for the origin row, the origin's.",
    "The minimal proxy is scripts/bench/minimal-proxy.mjs (keep-alive agent, hop-by-hop fields stripped, bodies piped, nothing else); fastify is scripts/bench/fastify-proxy.mjs.",
    "wrk, origin and proxy share one 2-core machine: read the ratios, not the absolute numbers.",
    "",
    ...nodeTable(nodeRows),
    "",
    ...workersLine(nodeRows),
    "",
    "Goals (issue 15):",
    "",
    ...goals(nodeRows),
    "",
    "Goal (issue 24):",
    "",
    ...countedGoal(nodeRows, paired),
    "",
    "Goal (issue 25):",
    "",
    ...overridesGoal(nodeRows, paired),
    ...(compared ? ["", `The same paired rounds, turn about, with the build BENCH_COMPARE_BIN=${COMPARE_BIN}:`, "", ...countedGoal([], compared), ...overridesGoal([], compared)] : []),
  ].join("\n");
  console.log(`\n${markdown}`);
  await writeBenchmarkSection("Gateway (bench:gateway)", markdown);
  console.log("\nwritten to BENCHMARKS.md");
  if (process.env.BENCH_WORKER === "1") await measureWorker();
}

async function measureWorker(): Promise<void> {
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
  const markdown = [
    `\`BENCH_WORKER=1 npm run bench:gateway\`: the same GET /api/hello under \`wrangler dev\` (local workerd), ${CONCURRENCY} requests in flight (scripts/bench/load.ts), ${DURATION_MS / 1000} s per run after a 1.5 s warm-up, ${ROUNDS} interleaved rounds, the median run shown.`,
    "",
    ...table(workerRows, "proxy Worker, no limiting"),
  ].join("\n");
  console.log(`\n${markdown}`);
  await writeBenchmarkSection("Gateway on the Worker (bench:gateway, BENCH_WORKER=1)", markdown);
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
