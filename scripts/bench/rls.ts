// bench:rls — Envoy's rate limit service over gRPC: `spillway serve --redis --rls-port` (the
// real CLI, its own process) against a minimal @grpc/grpc-js server (its own process too, this
// file run with `--minimal PORT`) that decodes the same request with the same shipped protos and
// answers OK without a store: the gRPC ceiling in Node; and the same minimal server with one
// Redis round trip per decision (`--minimal-redis PORT URL`). One client channel (as one Envoy keeps
// one HTTP/2 connection), 1, 16 and 64 concurrent streams, the servers loaded in alternating
// turns so a shared machine's drift falls on both alike. Goals (issue 26): ≥ 0.8× the minimal
// server's decisions/s, p99 ≤ 2 ms at 16 streams. Figures: BENCHMARKS.md, "Envoy RLS (gRPC)".
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, readdirSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import * as protoLoader from "@grpc/proto-loader";
import { freePort } from "../free-port.js";
import { startBenchRedis } from "../redis-server.js";

const pathOf = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));
const PROTO_DIR = pathOf("../../proto");
const SPILLWAY_BIN = pathOf("../../bin/spillway.mjs");
const THIS_FILE = pathOf("./rls.ts");
// BENCH_STREAMS="16" (a comma list) measures only those stream counts: a quicker look at one row.
const STREAMS = (process.env.BENCH_STREAMS ?? "1,16,64").split(",").map(Number);
const TURNS = 3;
const TURN_MS = Number(process.env.BENCH_TURN_MS ?? 3000);
const WARM_UP_MS = 1500;
const ADDRESSES = 10_000;

type Service = grpc.ServiceClientConstructor;

function loadProtos(): { RateLimitService: Service; Health: Service } {
  const definition = protoLoader.loadSync(["envoy/service/ratelimit/v3/rls.proto", "grpc/health/v1/health.proto"], { keepCase: true, longs: String, enums: String, defaults: false, oneofs: true, includeDirs: [PROTO_DIR] });
  const loaded = grpc.loadPackageDefinition(definition) as unknown as { envoy: { service: { ratelimit: { v3: { RateLimitService: Service } } } }; grpc: { health: { v1: { Health: Service } } } };
  return { RateLimitService: loaded.envoy.service.ratelimit.v3.RateLimitService, Health: loaded.grpc.health.v1.Health };
}

/** The minimal server: decode, answer OK per descriptor, no store. */
async function runMinimal(port: number): Promise<void> {
  const { RateLimitService, Health } = loadProtos();
  const server = new grpc.Server();
  server.addService(RateLimitService.service, {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<{ descriptors?: unknown[] }, unknown>, callback: grpc.sendUnaryData<unknown>) =>
      callback(null, { overall_code: "OK", statuses: (call.request.descriptors ?? []).map(() => ({ code: "OK" })) }),
  });
  serveHealth(server, Health);
  await new Promise<number>((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
  process.once("SIGTERM", () => server.forceShutdown());
}

/** Health/Check answers SERVING: the bench waits for it before measuring. */
function serveHealth(server: grpc.Server, Health: Service): void {
  server.addService(Health.service, { Check: (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(null, { status: "SERVING" }) });
}

/**
 * The minimal server plus one Redis round trip per decision (an EVALSHA of `return 1`, through
 * ioredis, on the same redis-server): what any service that decides in Redis pays at least, so
 * the rows show how much of Spillway's distance to the minimal server is the store's trip and
 * how much is its decision.
 */
async function runMinimalWithRedis(port: number, redisUrl: string): Promise<void> {
  const { default: Redis } = await import("ioredis");
  const redis = new Redis(redisUrl);
  const sha = (await redis.script("LOAD", "return 1")) as string;
  const { RateLimitService, Health } = loadProtos();
  const server = new grpc.Server({ "grpc.enable_channelz": 0 });
  serveHealth(server, Health);
  // What the reference answers per descriptor (code, current_limit, limit_remaining,
  // duration_until_reset), as Spillway does: BENCH_ANCHOR_ANSWER=ok for a bare OK per descriptor
  // (the anchor before 2026-11-28 session 15), which leaves the client less to decode.
  const statusOf = process.env.BENCH_ANCHOR_ANSWER === "ok" ? () => ({ code: "OK" }) : (_: unknown, index: number) => ANCHOR_STATUSES[index % ANCHOR_STATUSES.length]!;
  server.addService(RateLimitService.service, {
    ShouldRateLimit: (call: grpc.ServerUnaryCall<{ descriptors?: unknown[] }, unknown>, callback: grpc.sendUnaryData<unknown>) =>
      redis.evalsha(sha, 1, "bench:anchor").then(
        () => callback(null, { overall_code: "OK", statuses: (call.request.descriptors ?? []).map(statusOf) }),
        (error: Error) => callback({ code: grpc.status.UNAVAILABLE, details: error.message }),
      ),
  });
  await new Promise<number>((resolve, reject) => server.bindAsync(`127.0.0.1:${port}`, grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))));
  process.once("SIGTERM", () => {
    server.forceShutdown();
    redis.disconnect();
  });
}

/** The anchor's statuses: the shape Spillway and the reference answer for CONFIG's two limits (values fixed: the anchor decides nothing). */
const ANCHOR_STATUSES = [
  { code: "OK", current_limit: { requests_per_unit: 1_000_000, unit: "SECOND" }, limit_remaining: 999_998, duration_until_reset: { seconds: "0", nanos: 400_000_000 } },
  { code: "OK", current_limit: { requests_per_unit: 1_000_000_000, unit: "MINUTE" }, limit_remaining: 999_000_000, duration_until_reset: { seconds: "41", nanos: 0 } },
];

/** A per-address limit and a route-wide one: two descriptors per request, as Envoy's common set-up sends. */
const CONFIG = `domain: bench
descriptors:
  - key: remote_address
    rate_limit: { unit: second, requests_per_unit: 1000000 }
  - key: generic_key
    value: api
    rate_limit: { unit: minute, requests_per_unit: 1000000000 }
`;

const requestOf = (index: number) => ({
  domain: "bench",
  descriptors: [{ entries: [{ key: "remote_address", value: `10.1.${(index % ADDRESSES) >> 8}.${index % 256}` }] }, { entries: [{ key: "generic_key", value: "api" }] }],
});

const LABELS = {
  minimal: "minimal @grpc/grpc-js server, OK without a store",
  anchor: process.env.BENCH_ANCHOR_ANSWER === "ok" ? "the same + one Redis round trip (EVALSHA `return 1`), bare OK statuses" : "the same + one Redis round trip (EVALSHA `return 1`), statuses as the reference's",
  spillway: "`spillway serve --redis --rls-port`",
  workers: "the same, `--workers 2` (two connections)",
};

interface Result {
  decisions: number;
  elapsedMs: number;
  latenciesMs: number[];
  overLimit: number;
  errors: number;
  /** Errors by gRPC status name (a loaded machine's Redis timeouts show as UNAVAILABLE). */
  errorCodes: Record<string, number>;
}

type Call = (request: unknown, callback: (error: grpc.ServiceError | null, answer: { overall_code: string }) => void) => void;

/**
 * `streams` closed loops of unary calls, for `durationMs`: on one channel, or spread over
 * several (`--workers`: node:cluster hands each connection to one worker).
 */
async function load(clients: grpc.Client | grpc.Client[], streams: number, durationMs: number): Promise<Result> {
  const calls = (Array.isArray(clients) ? clients : [clients]).map((client) => (client as unknown as { ShouldRateLimit: Call }).ShouldRateLimit.bind(client));
  const result: Result = { decisions: 0, elapsedMs: 0, latenciesMs: [], overLimit: 0, errors: 0, errorCodes: {} };
  const startMs = performance.now();
  const endMs = startMs + durationMs;
  let index = 0;
  const worker = async (_: unknown, stream: number) => {
    const call = calls[stream % calls.length]!;
    while (performance.now() < endMs) {
      const sentMs = performance.now();
      await new Promise<void>((resolve) =>
        call(requestOf(index++), (error, answer) => {
          if (error) {
            result.errors++;
            const name = grpc.status[error.code] ?? String(error.code);
            result.errorCodes[name] = (result.errorCodes[name] ?? 0) + 1;
          } else {
            result.latenciesMs.push(performance.now() - sentMs);
            if (answer.overall_code !== "OK") result.overLimit++;
          }
          resolve();
        }),
      );
    }
  };
  await Promise.all(Array.from({ length: streams }, worker));
  result.elapsedMs = performance.now() - startMs;
  result.decisions = result.latenciesMs.length;
  return result;
}

function merge(results: Result[]): Result {
  const merged: Result = { decisions: 0, elapsedMs: 0, latenciesMs: [], overLimit: 0, errors: 0, errorCodes: {} };
  for (const result of results) {
    merged.decisions += result.decisions;
    merged.elapsedMs += result.elapsedMs;
    merged.latenciesMs.push(...result.latenciesMs);
    merged.overLimit += result.overLimit;
    merged.errors += result.errors;
    for (const [name, count] of Object.entries(result.errorCodes)) merged.errorCodes[name] = (merged.errorCodes[name] ?? 0) + count;
  }
  merged.latenciesMs.sort((a, b) => a - b);
  return merged;
}

/** CPU seconds a process and its children (`--workers`) have used so far (user + system, /proc, 10 ms ticks). */
function cpuSeconds(pid: number): number {
  let seconds = 0;
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, "utf8");
      const after = fields.slice(fields.lastIndexOf(") ") + 2).split(" ");
      // after[1]: the parent's pid.
      if (Number(entry) === pid || Number(after[1]) === pid) seconds += (Number(after[11]) + Number(after[12])) / 100;
    } catch {
      // The process ended while we looked.
    }
  }
  return seconds;
}

const quantile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;

// BENCH_PROFILE_DIR=/tmp/x: the anchor and the one-process server write V8 CPU profiles there
// (--cpu-prof, on their exit): where each one's CPU per decision goes, side by side.
// BENCH_NODE_FLAGS="--flag …": Node flags for those two alike (a GC setting tried on both).
const PROFILE_FLAGS = [
  ...(process.env.BENCH_PROFILE_DIR ? ["--cpu-prof", "--cpu-prof-dir", process.env.BENCH_PROFILE_DIR] : []),
  ...(process.env.BENCH_NODE_FLAGS?.split(" ").filter(Boolean) ?? []),
];

function start(args: string[], profiled = false): ChildProcess {
  const child = spawn(process.execPath, profiled ? [...PROFILE_FLAGS, ...args] : args, { stdio: ["ignore", "ignore", "inherit"] });
  process.once("exit", () => child.exitCode === null && child.kill("SIGTERM"));
  return child;
}

async function untilServing(Health: Service, address: string): Promise<void> {
  const health = new Health(address, grpc.credentials.createInsecure());
  const deadline = Date.now() + 30_000;
  try {
    for (;;) {
      const status = await new Promise<string>((resolve) => (health as unknown as { Check: (r: unknown, o: grpc.CallOptions, cb: (e: unknown, a?: { status: string }) => void) => void }).Check({}, { deadline: Date.now() + 1000 }, (_e, answer) => resolve(answer?.status ?? "")));
      if (status === "SERVING") return;
      if (Date.now() > deadline) throw new Error(`${address} is not SERVING after 30 s`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    health.close();
  }
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-rls-"));
  const children: ChildProcess[] = [];
  try {
    await writeFile(join(dir, "bench.yaml"), CONFIG);
    const [minimalPort, anchorPort, httpPort, rlsPort, workersHttpPort, workersRlsPort] = [await freePort(), await freePort(), await freePort(), await freePort(), await freePort(), await freePort()];
    children.push(start(["--import", "./bin/ts-hooks.mjs", THIS_FILE, "--minimal", String(minimalPort)]));
    children.push(start(["--import", "./bin/ts-hooks.mjs", THIS_FILE, "--minimal-redis", String(anchorPort), redis.url], true));
    children.push(start([SPILLWAY_BIN, "serve", "--redis", redis.url, "--port", String(httpPort), "--no-metrics", "--rls-port", String(rlsPort), "--rls-config", dir], true));
    children.push(start([SPILLWAY_BIN, "serve", "--redis", redis.url, "--port", String(workersHttpPort), "--no-metrics", "--rls-port", String(workersRlsPort), "--rls-config", dir, "--workers", "2"]));
    const { RateLimitService, Health } = loadProtos();
    const targets = [
      { name: "minimal", address: `127.0.0.1:${minimalPort}` },
      { name: "anchor", address: `127.0.0.1:${anchorPort}` },
      { name: "spillway", address: `127.0.0.1:${rlsPort}` },
      { name: "workers", address: `127.0.0.1:${workersRlsPort}` },
    ] as const;
    type Name = (typeof targets)[number]["name"];
    for (const target of targets) await untilServing(Health, target.address);
    const clients = Object.fromEntries(targets.map((target) => [target.name, new RateLimitService(target.address, grpc.credentials.createInsecure())])) as unknown as Record<Name, grpc.Client | grpc.Client[]>;
    // Two channels of their own (no shared subchannel): two connections, one per worker.
    clients.workers = [0, 1].map(() => new RateLimitService(`127.0.0.1:${workersRlsPort}`, grpc.credentials.createInsecure(), { "grpc.use_local_subchannel_pool": 1 }) as unknown as grpc.Client);
    console.log(`bench:rls — ${redis.description}; Node ${process.version}; ${TURNS} turns of ${TURN_MS} ms per server and stream count; uptime: ${(await import("node:os")).loadavg().map((load) => load.toFixed(2)).join(" ")}`);
    const pids: Record<Name, number> = { minimal: children[0]!.pid!, anchor: children[1]!.pid!, spillway: children[2]!.pid!, workers: children[3]!.pid! };
    // redis-server's CPU too: on a machine whose cores everything shares, the store's work is part of what a decision costs.
    const redisPid = redis.pid;
    const rows: string[] = ["| server | streams | decisions/s | p50 ms | p99 ms | server CPU µs/decision | Redis CPU µs/decision | client CPU µs/decision | decisions/s vs minimal | CPU vs minimal | over limit | errors |", "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"];
    for (const streams of STREAMS) {
      for (const target of targets) await load(clients[target.name], streams, WARM_UP_MS);
      const turns: Record<Name, Result[]> = { minimal: [], anchor: [], spillway: [], workers: [] };
      const cpu: Record<Name, number> = { minimal: 0, anchor: 0, spillway: 0, workers: 0 };
      const redisCpu: Record<Name, number> = { minimal: 0, anchor: 0, spillway: 0, workers: 0 };
      // The bench's own CPU (the gRPC client: encoding requests, decoding answers): on shared cores a bigger answer costs the machine there too.
      const clientCpu: Record<Name, number> = { minimal: 0, anchor: 0, spillway: 0, workers: 0 };
      for (let turn = 0; turn < TURNS; turn++) {
        for (const target of turn % 2 === 0 ? targets : [...targets].reverse()) {
          const before = cpuSeconds(pids[target.name]);
          const redisBefore = redisPid === undefined ? 0 : cpuSeconds(redisPid);
          const clientBefore = process.cpuUsage();
          turns[target.name].push(await load(clients[target.name], streams, TURN_MS));
          const clientUsed = process.cpuUsage(clientBefore);
          clientCpu[target.name] += (clientUsed.user + clientUsed.system) / 1e6;
          cpu[target.name] += cpuSeconds(pids[target.name]) - before;
          redisCpu[target.name] += redisPid === undefined ? 0 : cpuSeconds(redisPid) - redisBefore;
        }
      }
      const minimal = merge(turns.minimal);
      const cpuUs = (name: Name) => (cpu[name] / Math.max(1, merge(turns[name]).decisions)) * 1e6;
      const redisUs = (name: Name) => (redisCpu[name] / Math.max(1, merge(turns[name]).decisions)) * 1e6;
      const clientUs = (name: Name) => (clientCpu[name] / Math.max(1, merge(turns[name]).decisions)) * 1e6;
      for (const target of targets) {
        const result = merge(turns[target.name]);
        const perSecond = (result.decisions / result.elapsedMs) * 1000;
        const ratio = perSecond / ((minimal.decisions / minimal.elapsedMs) * 1000);
        const cpuRatio = cpuUs(target.name) / cpuUs("minimal");
        const label = LABELS[target.name];
        const row = `| ${label} | ${streams} | ${Math.round(perSecond).toLocaleString("en-US")} | ${quantile(result.latenciesMs, 0.5).toFixed(2)} | ${quantile(result.latenciesMs, 0.99).toFixed(2)} | ${cpuUs(target.name).toFixed(0)} | ${redisPid === undefined ? "–" : redisUs(target.name).toFixed(0)} | ${clientUs(target.name).toFixed(0)} | ${ratio.toFixed(2)} | ${cpuRatio.toFixed(2)} | ${result.overLimit} | ${result.errors === 0 ? "0" : Object.entries(result.errorCodes).map(([name, count]) => `${count} ${name}`).join(", ")} |`;
        rows.push(row);
        console.log(row);
      }
    }
    for (const client of Object.values(clients).flat()) client.close();
    console.log(`\n${rows.join("\n")}`);
  } finally {
    for (const child of children) if (child.exitCode === null) child.kill("SIGTERM");
    await rm(dir, { recursive: true, force: true });
    await redis.stop();
  }
}

const minimalAt = process.argv.indexOf("--minimal");
const anchorAt = process.argv.indexOf("--minimal-redis");
if (minimalAt >= 0) await runMinimal(Number(process.argv[minimalAt + 1]));
else if (anchorAt >= 0) await runMinimalWithRedis(Number(process.argv[anchorAt + 1]), process.argv[anchorAt + 2]!);
else await main();
