// bench:traces — what traces cost: `spillway serve --store memory` with a gateway route and
// `--rls-port`, run as four processes measured in interleaved turns (a shared machine's drift
// falls on all alike): this build with tracing off; the build BENCH_COMPARE_BIN names (the one
// before traces, e.g. main's bin/spillway.mjs) with tracing off; this build tracing every request
// (OTEL_TRACES_EXPORTER=otlp, always_on, to an OTLP/HTTP sink in this process); and this build
// tracing none (traceidratio 0: spans started but not recorded). Gateway load: wrk -t1 -c32 on
// GET /api/hello; RLS load: 16 concurrent ShouldRateLimit streams on one channel. Reported: the
// rate, and the server's CPU per request (its /proc times around each turn), the steadier figure
// on a loaded machine. Then the same decision in one process, with and without its two spans: the
// CPU tracing adds per decision. Writes BENCHMARKS.md's "Traces" section (BENCH_WRITE=0: prints it
// only; BENCH_MICRO_ONLY=1: the in-process part alone).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import * as grpc from "@grpc/grpc-js";
import { freePort } from "../free-port.js";
import { loadRlsProtos } from "../../src/node/grpc/server.js";
import { waitForHttp, writeBenchmarkSection } from "./load.js";
import { groupCpuSeconds, runWrk } from "./wrk.js";
import { parsePolicy } from "../../src/core/policy.js";
import type { SpillwayTracer } from "../../src/observe/trace.js";
import { traceLimiter } from "../../src/observe/traced-limiter.js";
import { MemoryStore } from "../../src/stores/memory.js";
import { startOtelTracing } from "../../src/node/tracing/otel.js";

const pathOf = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));
const THIS_BIN = pathOf("../../bin/spillway.mjs");
const COMPARE_BIN = process.env.BENCH_COMPARE_BIN;
const TURNS = Number(process.env.BENCH_TURNS ?? 3);
const TURN_SECONDS = Number(process.env.BENCH_TURN_SECONDS ?? 3);
const RLS_STREAMS = 16;

interface Target {
  label: string;
  bin: string;
  env: Record<string, string>;
  child?: ChildProcess;
  port?: number;
  rlsPort?: number;
  gateway: { requests: number; cpuSeconds: number; seconds: number }[];
  rls: { requests: number; cpuSeconds: number; seconds: number }[];
}

async function main(): Promise<void> {
  if (process.env.BENCH_MICRO_ONLY === "1") {
    // The in-process part alone (a quick look, written nowhere): its sink is this process's too.
    const sink = createServer((req, res) => req.resume().on("end", () => res.writeHead(200).end()));
    const port = await freePort();
    await new Promise<void>((resolve) => sink.listen(port, "127.0.0.1", resolve));
    console.log(await perDecision(port));
    sink.close();
    return;
  }
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-traces-"));
  const originPort = await freePort();
  const origin = spawn(process.execPath, [pathOf("../../examples/origin/server.mjs"), String(originPort)], { stdio: "ignore" });
  // The OTLP/HTTP sink: reads and acknowledges every export, decodes nothing.
  let exports = 0;
  const sink = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      exports++;
      res.writeHead(200, { "content-type": "application/x-protobuf" }).end();
    });
  });
  const sinkPort = await freePort();
  await new Promise<void>((resolve) => sink.listen(sinkPort, "127.0.0.1", resolve));
  const config = join(dir, "spillway.config.json");
  await writeFile(
    config,
    JSON.stringify({
      origin: `http://127.0.0.1:${originPort}`,
      policies: [{ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
      routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["bench"] }],
    }),
  );
  const rlsConfig = join(dir, "rls.yaml");
  await writeFile(rlsConfig, "domain: bench\ndescriptors:\n  - key: remote_address\n    rate_limit: { unit: second, requests_per_unit: 1000000000 }\n");
  const traced = { OTEL_TRACES_EXPORTER: "otlp", OTEL_EXPORTER_OTLP_ENDPOINT: `http://127.0.0.1:${sinkPort}` };
  const targets: Target[] = [
    { label: "this build, tracing off", bin: THIS_BIN, env: {}, gateway: [], rls: [] },
    ...(COMPARE_BIN ? [{ label: "before traces (BENCH_COMPARE_BIN), tracing off", bin: COMPARE_BIN, env: {}, gateway: [], rls: [] }] : []),
    { label: "this build, every request traced (always_on)", bin: THIS_BIN, env: { ...traced, OTEL_TRACES_SAMPLER: "always_on" }, gateway: [], rls: [] },
    { label: "this build, tracing on, none sampled (traceidratio 0)", bin: THIS_BIN, env: { ...traced, OTEL_TRACES_SAMPLER: "traceidratio", OTEL_TRACES_SAMPLER_ARG: "0" }, gateway: [], rls: [] },
  ];
  const { RateLimitService } = loadRlsProtos();
  const clients: grpc.Client[] = [];
  let micro: Awaited<ReturnType<typeof perDecision>>;
  try {
    await waitForHttp(`http://127.0.0.1:${originPort}/api/hello`);
    for (const target of targets) {
      target.port = await freePort();
      target.rlsPort = await freePort();
      target.child = spawn(process.execPath, [target.bin, "serve", "--config", config, "--store", "memory", "--no-metrics", "--port", String(target.port), "--rls-port", String(target.rlsPort), "--rls-config", rlsConfig], {
        stdio: "ignore",
        detached: true,
        env: { ...process.env, SPILLWAY_TOKEN: "bench", ...target.env },
      });
    }
    for (const target of targets) await waitForHttp(`http://127.0.0.1:${target.port}/healthz`);
    for (const target of targets) clients.push(new RateLimitService(`127.0.0.1:${target.rlsPort}`, grpc.credentials.createInsecure()));
    // Warm-up: one short turn each, not counted.
    for (const [index, target] of targets.entries()) {
      await runWrk(`http://127.0.0.1:${target.port}/api/hello`, 32, 1);
      await rlsLoad(clients[index]!, 1000);
    }
    for (let turn = 0; turn < TURNS; turn++) {
      for (const [index, target] of targets.entries()) {
        const result = await runWrk(`http://127.0.0.1:${target.port}/api/hello`, 32, TURN_SECONDS, target.child!.pid);
        target.gateway.push({ requests: result.requests, cpuSeconds: result.cpuSeconds, seconds: TURN_SECONDS });
        const before = groupCpuSeconds(target.child!.pid!);
        const requests = await rlsLoad(clients[index]!, TURN_SECONDS * 1000);
        target.rls.push({ requests, cpuSeconds: groupCpuSeconds(target.child!.pid!) - before, seconds: TURN_SECONDS });
      }
    }
    for (const target of targets) if (target.child?.pid) process.kill(-target.child.pid, "SIGTERM");
    // In this process, while the sink still listens.
    micro = await perDecision(sinkPort);
  } finally {
    for (const client of clients) client.close();
    for (const target of targets) if (target.child?.pid) process.kill(-target.child.pid, "SIGTERM");
    origin.kill();
    sink.close();
  }
  const sum = (runs: Target["gateway"]) => runs.reduce((total, run) => ({ requests: total.requests + run.requests, cpuSeconds: total.cpuSeconds + run.cpuSeconds, seconds: total.seconds + run.seconds }), { requests: 0, cpuSeconds: 0, seconds: 0 });
  const cell = (runs: Target["gateway"]) => {
    const total = sum(runs);
    return `${Math.round(total.requests / total.seconds).toLocaleString("en-US")} | ${((total.cpuSeconds / total.requests) * 1e6).toFixed(1)}`;
  };
  const rows = targets.map((target) => `| ${target.label} | ${cell(target.gateway)} | ${cell(target.rls)} |`);
  const markdown = [
    `Measured ${new Date().toISOString().slice(0, 10)} by \`npm run bench:traces\` (${TURNS} interleaved turns of ${TURN_SECONDS} s per row, ${process.env.BENCH_COMPARE_BIN ? "with" : "without"} a before row; the sink took ${exports} exports). Gateway: \`spillway serve --store memory\`, wrk -t1 -c32 GET /api/hello; RLS: \`--rls-port\`, ${RLS_STREAMS} streams on one channel. CPU µs per request: the server process's user + system time over the requests it answered.`,
    "",
    "| row | gateway req/s | gateway CPU µs/req | RLS decisions/s | RLS CPU µs/decision |",
    "| --- | ---: | ---: | ---: | ---: |",
    ...rows,
    "",
    `In one process, without HTTP or gRPC around it (CPU per decision, ${MICRO_DECISIONS.toLocaleString("en-US")} decisions a turn, ${TURNS} interleaved turns): a memory store's check alone, ${micro.bare.toFixed(2)} µs; inside a request span with its store span, recorded and exported (the SDK's batch processor, OTLP protobuf to the sink), ${micro.traced.toFixed(2)} µs; the same spans not sampled, ${micro.unsampled.toFixed(2)} µs. Tracing on costs about ${(micro.traced - micro.bare).toFixed(1)} µs of CPU per traced decision (two spans); with tracing off no tracer is installed and the request path does not change.`,
  ].join("\n");
  console.log(markdown);
  if (process.env.BENCH_WRITE !== "0") await writeBenchmarkSection("Traces (bench:traces)", markdown);
}

const MICRO_DECISIONS = 20_000;
const CHECK = { cost: 1, mode: "reject", maxWaitMs: 0 } as const;

/**
 * CPU µs per decision, in this process: the store's check alone, and the same check as the
 * gateway makes it with tracing on (a request span, the store span under it, both exported),
 * sampled and not.
 */
async function perDecision(sinkPort: number): Promise<{ bare: number; traced: number; unsampled: number }> {
  const policies = [parsePolicy({ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }, "policy")];
  const endpoint = { url: `http://127.0.0.1:${sinkPort}/v1/traces`, encoding: "protobuf" as const, serviceName: "bench", resource: {} };
  const sampled = startOtelTracing({ ...endpoint, sampler: { ratio: 1, parentBased: false } });
  const unsampled = startOtelTracing({ ...endpoint, sampler: { ratio: 0, parentBased: false } });
  const store = new MemoryStore();
  const run = async (tracer: SpillwayTracer | undefined): Promise<number> => {
    const limiter = traceLimiter(store, tracer);
    const started = process.cpuUsage();
    for (let i = 0; i < MICRO_DECISIONS; i++) {
      const key = `k${i & 1023}`;
      if (!tracer) {
        await limiter.check(key, policies, CHECK);
        continue;
      }
      const span = tracer.startRequest("spillway.gateway", undefined);
      await tracer.within(span, () => limiter.check(key, policies, CHECK));
      span.end();
    }
    const used = process.cpuUsage(started);
    return (used.user + used.system) / MICRO_DECISIONS;
  };
  const totals = { bare: 0, traced: 0, unsampled: 0 };
  for (let turn = 0; turn < TURNS + 1; turn++) {
    const bare = await run(undefined);
    const traced = await run(sampled.tracer);
    const none = await run(unsampled.tracer);
    // The first turn warms the JIT up: not counted.
    if (turn === 0) continue;
    totals.bare += bare / TURNS;
    totals.traced += traced / TURNS;
    totals.unsampled += none / TURNS;
  }
  await Promise.all([sampled.shutdown(), unsampled.shutdown()]);
  return totals;
}

type Call = (request: unknown, callback: (error: grpc.ServiceError | null) => void) => void;

/** RLS_STREAMS closed loops of ShouldRateLimit on one channel for `durationMs`: the calls answered. */
async function rlsLoad(client: grpc.Client, durationMs: number): Promise<number> {
  const call = (client as unknown as { ShouldRateLimit: Call }).ShouldRateLimit.bind(client);
  const endMs = performance.now() + durationMs;
  let answered = 0;
  let index = 0;
  const stream = async () => {
    while (performance.now() < endMs) {
      const address = `10.0.${(index >> 8) & 255}.${index++ & 255}`;
      await new Promise<void>((resolve) => call({ domain: "bench", descriptors: [{ entries: [{ key: "remote_address", value: address }] }] }, (error) => {
        if (!error) answered++;
        resolve();
      }));
    }
  };
  await Promise.all(Array.from({ length: RLS_STREAMS }, stream));
  return answered;
}

await main();
