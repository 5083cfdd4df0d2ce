/**
 * `npm run bench:client` — the experiment of seeds/002: calling an API that allows 6
 * requests per 3 s (sliding log) and takes 200 ms per request, with 10 and 20 requests,
 * five ways. Then the semaphore under contention among N processes.
 *
 * Every strategy gets a fresh origin (a real HTTP server on 127.0.0.1) and runs alone.
 * Flags: --runs N (median of N runs, default 1), --no-write (print only).
 */
import { fork } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { type IncomingMessage, type Server, type ServerResponse, createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { createSemaphore, createThrottle, httpLimiter, parseRetryAfter, throttledFetch } from "../../src/client/index.js";
import { resolvePolicies } from "../../src/core/policy.js";
import { MemoryStore } from "../../src/stores/memory.js";

const LIMIT = 6;
const WINDOW_MS = 3000;
const LATENCY_MS = 200;
/** Margin on the throttle's period: our slot times and the origin's arrival times differ by timer and socket jitter. */
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
      (globalThis as any).arrivals?.push(-nowMs);
      origin.tooMany++;
      const retryAfterS = Math.max(1, Math.ceil((admitted[admitted.length - LIMIT]! + WINDOW_MS - nowMs) / 1000));
      response.writeHead(429, { "retry-after": String(retryAfterS) }).end("too many requests");
      return;
    }
    admitted.push(nowMs);
    (globalThis as any).arrivals?.push(nowMs);
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
/** Set in main(): the stand-in limiter server that the HTTP row talks to. */
let limiterUrl = "";

const spillway = (periodMs: number, overHttp = false): Strategy => async (url, count) => {
  const throttle = createThrottle({
    limiter: overHttp ? httpLimiter({ url: limiterUrl, token: TOKEN }) : new MemoryStore(),
    key: `origin-${url}`,
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
  [`Spillway throttle via httpLimiter (a round trip per call)`, spillway(WINDOW_MS + MARGIN_MS, true)],
  [`Spillway throttle, no margin (6 / ${WINDOW_MS} ms)`, spillway(WINDOW_MS)],
];

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
    for (const [strategy, run] of STRATEGIES) {
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
    for (const [strategy] of STRATEGIES) {
      const rows = runs.map((run) => run.find((row) => row.strategy === strategy && row.count === count)!);
      const elapsedMs = median(rows.map((row) => row.elapsedMs));
      const minMs = theoreticalMs(count);
      const over = `${(((elapsedMs - minMs) / minMs) * 100).toFixed(1)} %`;
      lines.push(`| ${strategy} | ${count} | ${(elapsedMs / 1000).toFixed(2)} | ${(minMs / 1000).toFixed(1)} | ${over} | ${median(rows.map((row) => row.tooMany))} |`);
    }
  }
  return lines.join("\n");
}

// ---------- the semaphore: N processes contend for 4 leases through one limiter over HTTP ----------

const CAPACITY = 4;
const ACQUISITIONS_PER_PROCESS = 100;
const HOLD_MS = 2;
const PROCESS_COUNTS = [2, 4, 8];
const SEMAPHORE_POLICY = { name: "bench-sem", algorithm: "concurrency" as const, limit: CAPACITY, lease: "10s" };

/**
 * A minimal stand-in for `spillway serve` until src/http lands: check, acquire and release
 * of SPEC §3 over a MemoryStore. It also audits FIFO order: a lease granted while an
 * earlier arrival for the same key still waits is an order violation.
 */
async function startLimiterServer(): Promise<{ url: string; violations: () => number; close(): Promise<void> }> {
  const store = new MemoryStore();
  const waiting = new Map<string, Set<number>>();
  let arrivals = 0;
  let violations = 0;
  const server = createServer(async (request: IncomingMessage, response: ServerResponse) => {
    let text = "";
    for await (const chunk of request) text += chunk;
    const body = JSON.parse(text) as { key: string; policy: unknown; cost?: number; mode?: "reject" | "reserve"; maxWaitMs?: number; leaseId?: string };
    const reply = (status: number, answer: unknown) => response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(answer));
    if (request.headers.authorization !== `Bearer ${TOKEN}`) return reply(401, { detail: "bad token" });
    const policies = resolvePolicies(body.policy, new Map());
    if (request.url === "/v1/check") {
      const decision = await store.check(body.key, policies, { cost: body.cost ?? 1, mode: body.mode ?? "reject", maxWaitMs: body.maxWaitMs ?? 0 });
      return reply(decision.allowed ? 200 : 429, decision);
    }
    if (request.url === "/v1/release") return reply(200, await store.release(body.key, policies, body.leaseId!));
    const queue = waiting.get(body.key) ?? waiting.set(body.key, new Set()).get(body.key)!;
    const arrival = arrivals++;
    queue.add(arrival);
    const result = await store.acquire(body.key, policies, { maxWaitMs: body.maxWaitMs ?? 0 });
    queue.delete(arrival);
    if (result.acquired && [...queue].some((other) => other < arrival)) violations++;
    reply(result.acquired ? 200 : 429, result);
  });
  const url = await listen(server);
  return { url, violations: () => violations, close: () => closeServer(server) };
}

interface WorkerReport {
  waitsMs: number[];
}

/** One contending process: says it is ready, waits for "go", then acquires, holds briefly, releases, again. */
async function semaphoreWorker(url: string): Promise<void> {
  const semaphore = createSemaphore({ limiter: httpLimiter({ url, token: TOKEN }), key: "bench", policy: SEMAPHORE_POLICY, maxWaitMs: 60_000 });
  // Warm up (connection, JIT) before the clock starts: start-up is not contention.
  await (await semaphore.acquire()).release();
  const go = new Promise((resolve) => process.once("message", resolve));
  process.send!("ready");
  await go;
  const waitsMs: number[] = [];
  for (let i = 0; i < ACQUISITIONS_PER_PROCESS; i++) {
    const startMs = performance.now();
    await using _lease = await semaphore.acquire();
    waitsMs.push(performance.now() - startMs);
    await sleep(HOLD_MS);
  }
  process.send!({ waitsMs } satisfies WorkerReport);
  process.disconnect();
}

async function semaphoreTable(server: { url: string; violations: () => number }): Promise<string> {
  const lines = [
    "| processes | leases | acquisitions | order violations | acquisitions/s | wait p50 (ms) | wait p99 (ms) |",
    "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  const script = fileURLToPath(import.meta.url);
  for (const processes of PROCESS_COUNTS) {
    const violationsBefore = server.violations();
    const children = Array.from({ length: processes }, () => fork(script, ["semaphore-worker", server.url]));
    const ready = children.map((child) => new Promise((resolve) => child.once("message", resolve)));
    await Promise.all(ready);
    const reports = children.map(
      (child) =>
        new Promise<WorkerReport>((resolve, reject) => {
          child.once("message", (message) => resolve(message as WorkerReport));
          child.once("exit", (code) => (code === 0 ? undefined : reject(new Error(`worker exited with ${code}`))));
        }),
    );
    const startMs = performance.now();
    for (const child of children) child.send("go");
    const waits = (await Promise.all(reports)).flatMap((report) => report.waitsMs).sort((a, b) => a - b);
    const elapsedS = (performance.now() - startMs) / 1000;
    const p = (q: number) => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]!.toFixed(1);
    const violations = server.violations() - violationsBefore;
    lines.push(`| ${processes} | ${CAPACITY} | ${waits.length} | ${violations} | ${Math.round(waits.length / elapsedS)} | ${p(0.5)} | ${p(0.99)} |`);
  }
  return lines.join("\n");
}

// ---------- report ----------

function section(throttle: string, semaphore: string, runs: number): string {
  return `## Client

\`npm run bench:client\` (scripts/bench/client.ts), Node ${process.version}, ${new Date().toISOString().slice(0, 10)}${runs > 1 ? `, median of ${runs} runs` : ""}.

The experiment of seeds/002: a local origin on 127.0.0.1 that admits 6 requests per 3 s (exact
sliding log, half-open windows), takes ${LATENCY_MS} ms per admitted request, and answers 429 with
\`Retry-After\` in whole seconds otherwise. The theoretical minimum is (⌈n/6⌉ − 1) × 3 s + 0.2 s.
Every strategy runs alone against a fresh origin. The 429 strategies use the seed's
handler (wait as Retry-After says, retry). Spillway's throttle runs \`throttledFetch\` over a
MemoryStore with a sliding-log policy; its ${MARGIN_MS} ms margin on the period covers the jitter
between our slot times and the origin's arrival times (timers, sockets), which the
no-margin row shows is needed for zero 429s.

${throttle}

Semaphore: N processes (\`child_process.fork\`, warmed up by one acquisition before the clock
starts) each acquire a lease ${ACQUISITIONS_PER_PROCESS} times,
hold it ${HOLD_MS} ms, and release it (\`await using\`), through \`httpLimiter\` to one limiter
server holding ${CAPACITY} leases (a SPEC §3 acquire/release stand-in over MemoryStore, which audits
FIFO order: a grant while an earlier arrival still waits counts as a violation). The wait
includes the HTTP round trip.

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

async function main(): Promise<void> {
  const server = await startLimiterServer();
  limiterUrl = server.url;
  for (const [name, run] of [STRATEGIES[4]!, STRATEGIES[4]!]) {
    const origin = await startOrigin();
    const arrivals: number[] = [];
    (globalThis as any).arrivals = arrivals;
    const t0 = performance.now();
    await run(origin.url, 10);
    console.log(name, origin.tooMany, arrivals.map((a) => (a < 0 ? "x" + Math.round(-a - t0) : Math.round(a - t0))).join(" "));
    await origin.close();
  }
  await server.close();
}
await main();
