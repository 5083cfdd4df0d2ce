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
import type { ChildProcess } from "node:child_process";
import { startRedis } from "../redis-server.js";
import { waitForHttp, writeBenchmarkSection } from "./load.js";
import { COMPARE_BIN, COMPARE_PORT_OFFSET, CONCURRENCY, DURATION_MS, INSPECTOR_PORTS, ORIGIN_URL, PAIRED_ONLY, PAIRED_SECONDS, PORTS, ROUNDS, TOKEN, type Target, nginxTarget, start, stopAll, takenPorts, writeConfig } from "./gateway-servers.js";
import { type NodeRow, type Paired, type Pairing, measureAll, measureNode, measurePaired } from "./gateway-rounds.js";
import { LABELS, countedGoal, goals, nodeTable, overridesGoal, table, workersLine } from "./gateway-table.js";

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
  const compareBin = COMPARE_BIN;
  if (compareBin) {
    const at = (port: number, config = configPath) => server(serveWith(compareBin, port + COMPARE_PORT_OFFSET, memory, config), port + COMPARE_PORT_OFFSET);
    builds.push(
      pairingsOf(compareBin, {
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
    `The goals that compare two of our own rows are read from paired rounds as well: the server measured and a plain route's server of its own loaded at the same moment, by a wrk each, for ${PAIRED_SECONDS} s; the plain route is also paired with a second process of itself, which shows the method's own noise; the pairings take turns, and each plain partner is loaded only in its own pairing's turns, as the server it is paired with is. ${pinned ? "In those rounds the servers measured share CPU 0 (taskset) while the wrks and the origin run on the other: each server gets half a CPU, so the ratio of their req/s is the inverse ratio of their CPU per request." : "The processes could not be pinned to CPUs (taskset) in this run: the paired rounds share all CPUs."}`,
    "Proxy CPU is the proxy's own processes' user + system time over the run (/proc, 10 ms ticks) divided by the requests it answered; for the origin row, the origin's.",
    "The minimal proxy is scripts/bench/minimal-proxy.mjs (keep-alive agent, hop-by-hop fields stripped, bodies piped, nothing else); fastify is scripts/bench/fastify-proxy.mjs.",
    "wrk, origin and proxy share one 2-core machine: read the ratios, not the absolute numbers.",
    "",
    ...nodeTable(nodeRows),
    "",
    ...workersLine(nodeRows),
    "",
    "Goals against the proxies:",
    "",
    ...goals(nodeRows),
    "",
    "Goal, a counted route (within 5% of the plain one):",
    "",
    ...countedGoal(nodeRows, paired),
    "",
    "Goal, 1,000 overrides configured (within 3% of none):",
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
