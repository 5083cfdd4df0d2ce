// bench:redis — Spillway's Redis store side by side with a floor and other limiters, in one
// run against one local Redis, then end to end over HTTP, then over-admission under
// contention; writes `## Redis (bench:redis)` of BENCHMARKS.md.
//
//   npm run bench:redis                    (a throwaway redis-server on a free port; ~5 min)
//   BENCH_QUICK=1 npm run bench:redis      (short cells, prints only, writes nothing)
//   BENCH_SLICES=6 BENCH_HTTP_MS=2000      (fewer turns per contender and cell, shorter HTTP rows, still written)
//   BENCH_SLICE_MS=250                     (each contender's turn within a cell)
//   REDIS_URL=redis://127.0.0.1:6379       (an existing server; keys are prefixed bench:<run>:)
//   npm run bench:redis -- sliding-log     (only the sliding-log section, ~1 min: writes `## Sliding log (bench:redis sliding-log)`)
//   npm run bench:redis -- http            (only the HTTP rows, ~1 min: prints their table, writes nothing)
import { type AdmissionOptions, admissionTable, runAdmission } from "./redis-admission.js";
import { ADMISSION_CONTENDERS, type Contender, SPILLWAY_GCRA, SPILLWAY_GCRA_EVALSHA, THROUGHPUT_CONTENDERS, connect } from "./redis-contenders.js";
import { goalLines, ratioTable } from "./redis-goals.js";
import { type HttpOptions, httpTable, runHttp } from "./redis-http.js";
import { startBenchRedis } from "../redis-server.js";
import { type SlidingLogOptions, runSlidingLog, slidingLogGoal, slidingLogTable } from "./redis-sliding-log.js";
import { redisUsec, resetRedisStats } from "./redis-stats.js";
import { type ThroughputOptions, measureCell, runThroughput, throughputTables } from "./redis-throughput.js";
import { writeBenchmarkSection } from "./load.js";

const QUICK = process.env.BENCH_QUICK === "1";
const SLICE_MS = Number(process.env.BENCH_SLICE_MS ?? (QUICK ? 100 : 250));
const SLICES = Number(process.env.BENCH_SLICES ?? (QUICK ? 2 : 12));
const WARM_UP_MS = QUICK ? 100 : 500;
const HTTP_MS = Number(process.env.BENCH_HTTP_MS ?? (QUICK ? 1000 : 5000));
const HTTP_CONCURRENCY = 64;
const HTTP_TURNS = QUICK ? 2 : 5;
const TITLE = "Redis (bench:redis)";
const SLIDING_LOG_TITLE = "Sliding log (bench:redis sliding-log)";
const log = (line: string) => console.log(line);

/**
 * Redis µs per call that Spillway's EVALSHA fallback (Redis < 7, or FUNCTION/FCALL refused)
 * adds to a GCRA decision: the same decisions (16 callers, 10,000 keys) as SPILLWAY_GCRA,
 * once on a connection whose ACL user may not use FUNCTION or FCALL. Its script defines the
 * stack's Lua on every call; FCALL's library is defined once per server.
 */
async function libraryCost(url: string, runId: string): Promise<number> {
  const admin = await connect(url);
  const user = `spillway-bench-${runId}`;
  await admin.call("ACL", "SETUSER", user, "on", "nopass", "~*", "&*", "+@all", "-function", "-fcall", "-fcall_ro");
  const restricted = new URL(url);
  restricted.username = user;
  restricted.password = "";
  const redisUsPerCall = async (contender: Contender, clientUrl: string) => {
    const client = await connect(clientUrl);
    try {
      const decide = await contender.create(client, { limit: 1_000_000_000, periodMs: 86_400_000, neverDeny: true }, `bench:${runId}:library:${contender.id}:`);
      await measureCell(decide, 16, 10_000, WARM_UP_MS);
      await resetRedisStats(admin);
      const result = await measureCell(decide, 16, 10_000, SLICE_MS * SLICES);
      return (await redisUsec(admin)) / (result.calls + result.errors);
    } finally {
      client.disconnect();
    }
  };
  try {
    const evalshaUs = await redisUsPerCall(SPILLWAY_GCRA_EVALSHA, restricted.toString());
    return evalshaUs - (await redisUsPerCall(SPILLWAY_GCRA, url));
  } finally {
    await admin.call("ACL", "DELUSER", user);
    admin.disconnect();
  }
}

/** The sliding-log section: a decision's cost on a full log at limit 1k, 10k and 100k; writes its own section. */
async function slidingLogSection(url: string, runId: string): Promise<void> {
  const startedMs = performance.now();
  const options: SlidingLogOptions = { url, runId, limits: [1_000, 10_000, 100_000], periodMs: 100_000, budgetMs: QUICK ? 1000 : 5000 };
  const rows = await runSlidingLog(options, log);
  const seconds = ((performance.now() - startedMs) / 1000).toFixed(0);
  const markdown = [
    `\`npm run bench:redis -- sliding-log\` (scripts/bench/redis-sliding-log.ts; also part of a whole \`npm run bench:redis\`), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${seconds} s.`,
    `One key whose sliding-log policy (period ${options.periodMs / 1000} s) holds \`limit\` admissions of cost 1 spread evenly over the period, admitted through the store itself on the client clock (pipelined).`,
    `Then decisions continue that trace on the client clock, one per step of period ÷ limit (a key held at its limit rate: it admits as old admissions stop counting), one caller, for ${options.budgetMs / 1000} s or \`limit\` decisions.`,
    "Redis µs/decision is Redis's own time per FCALL (INFO commandstats). The last two columns are the same trace on `KeyState.check` in this Node process: the memory store's decision, and with `JSON.stringify` of the state it changed, which the Durable Object writes to SQLite on every admission.",
    "A sliding log keeps one entry per bucket of period ÷ 64 (README, sliding-log), so its state holds at most 65 live entries whatever the limit; before that it held one per admission time (see the next section).",
    "",
    ...slidingLogGoal(rows),
    "",
    ...slidingLogTable(rows),
  ].join("\n");
  log(`\n${markdown}`);
  if (QUICK) {
    log("\nquick run: BENCHMARKS.md left alone");
  } else {
    await writeBenchmarkSection(SLIDING_LOG_TITLE, markdown);
    log(`\nwritten to BENCHMARKS.md (## ${SLIDING_LOG_TITLE})`);
  }
}

const httpOptions = (redisUrl: string): HttpOptions => ({ redisUrl, concurrency: HTTP_CONCURRENCY, keyCounts: [1, 10_000], durationMs: HTTP_MS, turns: HTTP_TURNS, warmUpMs: Math.min(1000, HTTP_MS / 4) });

async function main(): Promise<void> {
  const startedMs = performance.now();
  const redis = await startBenchRedis();
  if (process.argv[2] === "sliding-log") {
    try {
      await slidingLogSection(redis.url, Date.now().toString(36));
    } finally {
      await redis.stop();
    }
    return;
  }
  if (process.argv[2] === "http") {
    try {
      log(httpTable(await runHttp(httpOptions(redis.url), log)).join("\n"));
    } finally {
      await redis.stop();
    }
    return;
  }
  if (process.argv[2] !== undefined) throw new Error(`bench:redis takes no argument, "sliding-log" or "http", got ${JSON.stringify(process.argv[2])}`);
  const runId = Date.now().toString(36);
  try {
    log(`bench:redis against ${redis.description}, ${SLICES} turns of ${SLICE_MS} ms per contender and cell${QUICK ? " (quick: nothing is written)" : ""}\n`);
    const throughput: ThroughputOptions = {
      url: redis.url,
      runId,
      contenders: THROUGHPUT_CONTENDERS,
      concurrencies: [1, 16, 256],
      keyCounts: [1, 10_000],
      sliceMs: SLICE_MS,
      slices: SLICES,
      warmUpMs: WARM_UP_MS,
    };
    const results = await runThroughput(throughput, log);
    const libraryUs = await libraryCost(redis.url, runId);
    log(`\nSpillway's EVALSHA fallback: ${libraryUs.toFixed(1)} µs more Redis time per GCRA decision than FCALL\n`);

    const httpRows = await runHttp(httpOptions(redis.url), log);

    const admission: AdmissionOptions = {
      url: redis.url,
      runId,
      contenders: ADMISSION_CONTENDERS,
      clients: 200,
      requestsPerClient: 5,
      rounds: QUICK ? 1 : 3,
      spec: { limit: 100, periodMs: 60_000 },
    };
    log("");
    const admitted = await runAdmission(admission, log);

    const minutes = ((performance.now() - startedMs) / 60_000).toFixed(1);
    const markdown = [
      `\`npm run bench:redis\` (scripts/bench/redis.ts), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}, ${minutes} min for the whole run, against ${redis.description}.`,
      "The load generator, the limiters' Node side and Redis share the project's 2-core machine: read the ratios, not the absolute numbers.",
      "",
      "### Goals",
      "",
      ...goalLines({ options: throughput, results, admission: admitted, libraryUs }),
      "",
      ratioTable(throughput, results).join("\n"),
      "",
      "### Decisions against one Redis",
      "",
      `Closed loop: \`callers\` concurrent callers, each awaiting its answer before sending again. In each cell (a key count and a caller count) every contender warms up for ${WARM_UP_MS / 1000} s, then the contenders take turns of ${SLICE_MS} ms, ${SLICES} turns each (${(SLICE_MS * SLICES) / 1000} s measured per contender and cell),`,
      "each turn starting with the next contender: the fast and slow minutes of a shared machine fall on all of them alike, so their ratios hold even when the absolute numbers drift. Each row sums its turns.",
      "Every contender has its own ioredis connection with the same settings (Spillway's `REDIS_CLIENT_OPTIONS`) and a limit no request reaches, so every call takes the admit-and-write path on a live state (1e9 per day; GCRA: 1000 per day with a burst of 1e9, whose state stays days ahead).",
      "10,000 keys are visited round robin. Redis script µs/decision is Redis's own time per call (INFO commandstats: the script, including what it calls); CPU µs/decision is this Node process's CPU (load generator included) and the Redis process's CPU (I/O included) per call.",
      "The floor is the cheapest possible EVALSHA (`return 1`, one key), sent as plain ioredis sends it; INCR is the cheapest possible counter;",
      "the commands-only floor is one FCALL with Spillway's key and arguments that runs a Spillway GCRA decision's commands (TIME, GET, SET … PXAT of a constant) with no logic and answers a reply of the same shape; the minimal exact GCRA is a hand-written FCALL for the run's one GCRA policy (TIME, GET, SET … PXAT of the next state) answering Spillway's reply, from which Node computes the decision with the core's `decide()` as Spillway does.",
      "The Spillway stack row checks two policies at once (GCRA and a fixed window: stack.lua, each algorithm's fused step, the decision computed in Node).",
      "Spillway is `RedisStore.check` (one FCALL, one policy, server clock, per-call timeout 2 s, the decision computed in full, writes coalesced under load: the defaults), and once more with `coalesceWrites: false`; rate-limiter-flexible is `RateLimiterRedis.consume` (its own INCR script);",
      "the upstash-style row is the two-window weighted counter of @upstash/ratelimit's `slidingWindow`, written in scripts/bench/redis-upstash.ts and sent with ioredis EVALSHA.",
      "",
      ...throughputTables(throughput, results),
      `Spillway uses FCALL (Redis 7 Functions: its Lua is defined once per server). Diagnostic for its EVALSHA fallback (Redis < 7, or FUNCTION/FCALL refused): the same GCRA decisions on a connection whose ACL user may not use them cost ${libraryUs.toFixed(1)} µs more Redis time per call (16 callers, 10,000 keys): the script defines its Lua on every call.`,
      "",
      "### End to end over HTTP",
      "",
      `runLoad (scripts/bench/load.ts), ${HTTP_CONCURRENCY} requests in flight on keep-alive sockets, ${HTTP_MS / 1000} s per row after a warm-up, in ${HTTP_TURNS} turns that alternate between the two servers; POST /v1/check \`{ key, policy: "bench" }\` (GCRA, 1000 per day with a burst of 1e9: a limit no request reaches).`,
      "Both servers are their own Node process: `spillway serve --redis` (bin/spillway.mjs, the default 50 ms store timeout: a 503 is a decision that took longer) and scripts/bench/redis-bare-server.ts,",
      "the minimal `node:http` server: it reads the body, `JSON.parse`, one `RedisStore.check` with the same policy, and answers the same decision JSON and RateLimit headers, with no validation, auth or observer.",
      "Server CPU is the server process's user + system time over its turns (/proc, 10 ms ticks) divided by the requests it answered.",
      "",
      ...httpTable(httpRows),
      "",
      "### Over-admission under contention",
      "",
      `${admission.clients} clients, each on its own Redis connection, each firing ${admission.requestsPerClient} requests at once at one fresh key; limit ${admission.spec.limit} per ${admission.spec.periodMs / 1000} s; ${admission.rounds} rounds (a fresh key each), never across a window edge.`,
      "\"May admit\" is the limit, except for GCRA, which may also admit what its rate refills during the burst (limit + ⌊burst time × limit / period⌋).",
      "The control row is a deliberately racy GET-then-INCR limiter: it shows that the test does catch over-admission.",
      "",
      ...admissionTable(admission, admitted),
    ].join("\n");
    log(`\n${markdown}`);
    if (QUICK) {
      log("\nquick run: BENCHMARKS.md left alone");
    } else {
      await writeBenchmarkSection(TITLE, markdown);
      log(`\nwritten to BENCHMARKS.md (## ${TITLE})`);
    }
    log("");
    await slidingLogSection(redis.url, runId);
  } finally {
    await redis.stop();
  }
}

await main();
