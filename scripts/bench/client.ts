/**
 * `npm run bench:client` — the experiment of seeds/002: calling an API that allows 6
 * requests per 3 s (sliding log) and takes 200 ms per request, with 10 and 20 requests,
 * five ways. Then the semaphore under contention among N processes (client-semaphore.ts).
 * Redis rows run when REDIS_URL (default redis://127.0.0.1:6379) answers.
 *
 * Every strategy gets a fresh origin (a real HTTP server on 127.0.0.1) and runs alone.
 * Flags: --runs N (median of N runs, default 1), --no-write (print only).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { type Server, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { createThrottle, httpLimiter, parseRetryAfter, throttledFetch } from "../../src/client/index.js";
import { type Limiter, MemoryStore, parseConfig, startServer } from "../../src/node-middleware.js";
import { RedisStore } from "../../src/redis.js";
import { ACQUISITIONS_PER_PROCESS, CAPACITY, HOLD_MS, semaphoreTable } from "./client-semaphore.js";

const LIMIT = 6;
const WINDOW_MS = 3000;
const LATENCY_MS = 200;
/**
 * Margin on the throttle's period. The origin's windows start when a request *arrives*, the
 * throttle's when its slot is booked; in between lie timers, cold code and connection set-up,
 * longest on a process's first burst (up to ~100 ms measured here, on loopback).
 */
const MARGIN_MS = 100;
const SIZES = [10, 20];
const TOKEN = "bench-token";
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

// ---------- the origin: 6 per 3 s, exact sliding log over admitted requests, 200 ms per request ----------

interface Origin {
  url: string;
  tooMany: number;
  close(): Promise<void>;
}

async function startOrigin(): Promise<Origin> {
  const admitted: number[] = [];
  const origin = { url: "", tooMany: 0, close: async () => {} };
  const server = createServer((request, response) => {
    const nowMs = performance.now();
    // Half-open windows: an admission at x counts in [x, x + 3000).
    while (admitted.length > 0 && admitted[0]! + WINDOW_MS <= nowMs) admitted.shift();
    if (admitted.length >= LIMIT) {
      origin.tooMany++;
      const retryAfterS = Math.max(1, Math.ceil((admitted[admitted.length - LIMIT]! + WINDOW_MS - nowMs) / 1000));
      response.writeHead(429, { "retry-after": String(retryAfterS) }).end("too many requests");
      return;
    }
    admitted.push(nowMs);
    request.resume();
    setTimeout(() => response.writeHead(200).end("ok"), LATENCY_MS);
  });
  origin.url = await listen(server);
  origin.close = () => closeServer(server);
  return origin;
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`)));
}

function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

// ---------- the strategies of seeds/002 and Spillway's ----------

/** The seed's 429 handler: wait as Retry-After says, try again, until it passes. */
async function callWithRetry(url: string): Promise<void> {
  for (;;) {
    const response = await fetch(url);
    await response.text();
    if (response.status !== 429) return;
    await sleep(parseRetryAfter(response.headers.get("retry-after")) ?? 1000);
  }
}

type Strategy = (url: string, count: number) => Promise<void>;

const serialWithSleep: Strategy = async (url, count) => {
  for (let i = 0; i < count; i++) {
    await callWithRetry(url);
    await sleep(WINDOW_MS / LIMIT);
  }
};
const serialWithRetry: Strategy = async (url, count) => {
  for (let i = 0; i < count; i++) await callWithRetry(url);
};
const parallelWithRetry: Strategy = async (url, count) => {
  await Promise.all(Array.from({ length: count }, () => callWithRetry(url)));
};
const sixAtATime: Strategy = async (url, count) => {
  let next = 0;
  const worker = async () => {
    while (next < count) {
      next++;
      await callWithRetry(url);
    }
  };
  await Promise.all(Array.from({ length: LIMIT }, worker));
};
/** Set in main(): the Node server the httpLimiter row talks to, and Redis when it answers. */
const backends: { serverUrl: string; redis?: RedisStore } = { serverUrl: "" };

const spillway = (periodMs: number, backend: "memory" | "http" | "redis" = "memory"): Strategy => async (url, count) => {
  const limiters: Record<typeof backend, () => Limiter> = {
    memory: () => new MemoryStore(),
    http: () => httpLimiter({ url: backends.serverUrl, token: TOKEN }),
    redis: () => backends.redis!,
  };
  const throttle = createThrottle({
    limiter: limiters[backend](),
    // A fresh key per run: nothing left over from an earlier run.
    key: `origin-${url}-${Date.now()}`,
    policy: { name: "origin", algorithm: "sliding-log", limit: LIMIT, period: periodMs },
  });
  const fetchOrigin = throttledFetch({ throttle });
  await Promise.all(Array.from({ length: count }, async () => (await fetchOrigin(url)).text()));
};

const STRATEGIES: Array<[name: string, run: Strategy]> = [
  ["sleep 500 ms between requests", serialWithSleep],
  ["serial, retry on 429", serialWithRetry],
  ["all in parallel, retry on 429", parallelWithRetry],
  ["at most 6 at a time, retry on 429", sixAtATime],
  [`**Spillway throttle** (sliding-log 6 / ${WINDOW_MS + MARGIN_MS} ms)`, spillway(WINDOW_MS + MARGIN_MS)],
  ["Spillway throttle via httpLimiter to the Node server", spillway(WINDOW_MS + MARGIN_MS, "http")],
  ["Spillway throttle on Redis (RedisStore)", spillway(WINDOW_MS + MARGIN_MS, "redis")],
  [`Spillway throttle, no margin (6 / ${WINDOW_MS} ms)`, spillway(WINDOW_MS)],
];

/** The Redis row only when Redis answers. */
const strategies = () => STRATEGIES.filter(([name]) => backends.redis || !name.includes("Redis"));

const theoreticalMs = (count: number) => (Math.ceil(count / LIMIT) - 1) * WINDOW_MS + LATENCY_MS;

interface Row {
  strategy: string;
  count: number;
  elapsedMs: number;
  tooMany: number;
}

/** One strategy at a time, as in the seed: concurrent runs would share one event loop and blur each other's timing. */
async function runOnce(): Promise<Row[]> {
  const rows: Row[] = [];
  for (const count of SIZES) {
    for (const [strategy, run] of strategies()) {
      const origin = await startOrigin();
      const startMs = performance.now();
      await run(origin.url, count);
      const elapsedMs = performance.now() - startMs;
      await origin.close();
      rows.push({ strategy, count, elapsedMs, tooMany: origin.tooMany });
      console.error(`${strategy}, ${count} requests: ${(elapsedMs / 1000).toFixed(2)} s, ${origin.tooMany} × 429`);
    }
  }
  return rows;
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

function throttleTable(runs: Row[][]): string {
  const lines = ["| strategy | requests | time (s) | theoretical min (s) | over min | 429s |", "| --- | ---: | ---: | ---: | ---: | ---: |"];
  for (const count of SIZES) {
    for (const [strategy] of strategies()) {
      const rows = runs.map((run) => run.find((row) => row.strategy === strategy && row.count === count)!);
      const elapsedMs = median(rows.map((row) => row.elapsedMs));
      const minMs = theoreticalMs(count);
      const over = `${(((elapsedMs - minMs) / minMs) * 100).toFixed(1)} %`;
      lines.push(`| ${strategy} | ${count} | ${(elapsedMs / 1000).toFixed(2)} | ${(minMs / 1000).toFixed(1)} | ${over} | ${Math.max(...rows.map((row) => row.tooMany))} |`);
    }
  }
  return lines.join("\n");
}

// ---------- report ----------

function section(throttle: string, semaphore: string, runs: number): string {
  return `## Client

\`npm run bench:client\` (scripts/bench/client.ts), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}${runs > 1 ? `; times are the median of ${runs} runs, 429s the most in any run` : ""}.

The experiment of seeds/002: a local origin on 127.0.0.1 that admits 6 requests per 3 s (exact
sliding log, half-open windows), takes ${LATENCY_MS} ms per admitted request, and answers 429 with
\`Retry-After\` in whole seconds otherwise. The theoretical minimum is (⌈n/6⌉ − 1) × 3 s + 0.2 s.
Every strategy runs alone against a fresh origin. The 429 strategies use the seed's
handler (wait as Retry-After says, retry). Spillway's throttle runs \`throttledFetch\` over a
MemoryStore (or the Node server through httpLimiter, or Redis) with a sliding-log policy.
Its ${MARGIN_MS} ms margin on the period covers the difference between when a slot is booked
and when the request reaches the origin (timers, cold code, new connections: up to ~100 ms on a
process's first burst here); without it the first burst arrives late, the second on time, and
the origin refuses some of the second (the no-margin row). Over the internet, size the margin
to the connection set-up time (TLS handshake).
The 429 strategies fare better here than in the seed because this origin does not count
refused requests, so stale Retry-After values cannot spiral; they still spend the refused
requests the 429s column counts.

${throttle}

Semaphore: N processes (\`child_process.fork\`, warmed up by one acquisition before the clock
starts) each acquire a lease ${ACQUISITIONS_PER_PROCESS} times, hold it ${HOLD_MS} ms and release it
(\`await using\`); ${CAPACITY} leases in all. Order is audited exactly, in the store's own order: through
the Node server, the store is wrapped (a grant while an earlier arrival still waits is a
violation); on Redis, where every process has its own RedisStore so FIFO is across processes,
Redis MONITOR gives each waiter's first script call (arrival) and the one before its release (grant). The waits
(client clocks) include the round trips; MONITOR slows Redis a little.
The machine has 2 cores shared by the server, Redis and every process: throughput is CPU-bound.

${semaphore}
`;
}

function writeSection(text: string): void {
  const path = fileURLToPath(new URL("../../BENCHMARKS.md", import.meta.url));
  let current = "";
  try {
    current = readFileSync(path, "utf8");
  } catch {
    current = "# Benchmarks\n";
  }
  // Replace only our own section: from "## Client" to the next "## " heading.
  const start = current.search(/^## Client\s*$/m);
  if (start < 0) {
    writeFileSync(path, `${current.trimEnd()}\n\n${text}`);
    return;
  }
  const after = current.slice(start + 1).search(/^## /m);
  const end = after < 0 ? current.length : start + 1 + after;
  writeFileSync(path, `${current.slice(0, start)}${text}${after < 0 ? "" : `\n${current.slice(end)}`}`);
}

async function redisIfUp(): Promise<RedisStore | undefined> {
  const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  const redis = new RedisStore({ url, keyPrefix: `spillway-bench-${process.pid}:`, timeoutMs: 1000, log: () => {} });
  if (await redis.ready(1000)) return redis;
  console.error(`no Redis at ${url}: Redis rows skipped`);
  await redis.close();
  return undefined;
}

async function main(): Promise<void> {
  const runsFlag = process.argv.indexOf("--runs");
  const runs = runsFlag > 0 ? Number(process.argv[runsFlag + 1]) : 1;
  const server = await startServer({ config: parseConfig({}), limiter: new MemoryStore(), port: 0, token: TOKEN });
  backends.serverUrl = server.url;
  backends.redis = await redisIfUp();
  const results: Row[][] = [];
  for (let run = 0; run < runs; run++) results.push(await runOnce());
  const throttle = throttleTable(results);
  console.log(throttle);
  await server.close();
  await backends.redis?.close();
  const semaphore = await semaphoreTable(backends.redis ? (process.env.REDIS_URL ?? "redis://127.0.0.1:6379") : undefined);
  console.log(`\n${semaphore}`);
  if (!process.argv.includes("--no-write")) writeSection(section(throttle, semaphore, runs));
}

await main();
