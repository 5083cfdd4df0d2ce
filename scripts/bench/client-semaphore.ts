/**
 * The semaphore part of `npm run bench:client`: N processes contend for 4 leases, each
 * acquiring, holding 2 ms and releasing 100 times. Imported by client.ts; forked by itself
 * as `client-semaphore.ts worker <backend> <url> <prefix>` for each contending process.
 *
 * Backends: the real Node server (`startServer`) over a MemoryStore, reached with
 * httpLimiter, and Redis directly from every process (RedisStore), so FIFO is across processes.
 * Order is audited exactly on both: at the store behind the server, and through Redis MONITOR.
 */
import { fork } from "node:child_process";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { createSemaphore, httpLimiter } from "../../src/client/index.js";
import { type Limiter, MemoryStore, parseConfig, startServer } from "../../src/node-middleware.js";
import { RedisStore } from "../../src/redis.js";

export const CAPACITY = 4;
export const ACQUISITIONS_PER_PROCESS = 100;
export const HOLD_MS = 2;
export const PROCESS_COUNTS = [2, 4, 8];
const TOKEN = "bench-token";
const POLICY = { name: "bench-sem", algorithm: "concurrency" as const, limit: CAPACITY, lease: "10s" };
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const nowMs = () => performance.timeOrigin + performance.now();

interface Acquisition {
  sentAtMs: number;
  grantedAtMs: number;
}

/** The store behind the server, wrapped to audit FIFO: a grant while an earlier arrival still waits is a violation. */
function audited(store: Limiter): { limiter: Limiter; violations: () => number } {
  const waiting = new Set<number>();
  let arrivals = 0;
  let violations = 0;
  const limiter: Limiter = {
    kind: store.kind,
    check: (key, policies, options) => store.check(key, policies, options),
    peek: (key, policies) => store.peek(key, policies),
    debit: (key, policies, cost) => store.debit(key, policies, cost),
    reset: (key, policies) => store.reset(key, policies),
    credits: (key, policy, change) => store.credits(key, policy, change),
    release: (key, policies, leaseId) => store.release(key, policies, leaseId),
    extend: (key, policies, leaseId, leaseMs) => store.extend(key, policies, leaseId, leaseMs),
    health: () => store.health(),
    close: () => store.close?.() ?? Promise.resolve(),
    async acquire(key, policies, options) {
      const arrival = arrivals++;
      waiting.add(arrival);
      const result = await store.acquire(key, policies, options);
      waiting.delete(arrival);
      if (result.acquired && [...waiting].some((other) => other < arrival)) violations++;
      return result;
    },
  };
  return { limiter, violations: () => violations };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/**
 * Audits FIFO on Redis from Redis's own order. MONITOR lists every script call as executed;
 * a waiter's id (which becomes its lease id) appears in each of its acquire attempts and
 * then in its release. So per id: the first call is the arrival, the one before the release
 * is the grant. B overtook A if A arrived first and was granted after B.
 */
async function redisAudit(url: string): Promise<{ violations: () => number; close(): Promise<void> }> {
  const client = new Redis(url);
  const monitor = await client.monitor();
  const calls = new Map<string, number[]>();
  let seen = 0;
  monitor.on("monitor", (_time: string, args: string[]) => {
    const command = args[0]?.toLowerCase();
    if (command !== "fcall" && command !== "evalsha" && command !== "eval") return;
    const id = args.find((arg) => UUID.test(arg));
    if (id) calls.set(id, [...(calls.get(id) ?? []), seen++]);
  });
  const violations = () => {
    // Nothing seen would read as "no violations": refuse that instead.
    if (calls.size === 0) throw new Error("Redis MONITOR saw no script calls: the audit is blind");
    const waiters = [...calls.values()].filter((indices) => indices.length >= 2).map((indices) => ({ arrival: indices[0]!, grant: indices.at(-2)! }));
    waiters.sort((a, b) => a.arrival - b.arrival);
    let count = 0;
    let latestGrant = -1;
    // Walking in arrival order, a grant earlier than one already seen means this waiter overtook.
    for (const { grant } of waiters) {
      if (grant < latestGrant) count++;
      latestGrant = Math.max(latestGrant, grant);
    }
    return count;
  };
  return {
    violations,
    close: async () => {
      monitor.disconnect();
      client.disconnect();
    },
  };
}

async function worker(backend: string, url: string, prefix: string): Promise<void> {
  const limiter = backend === "redis" ? new RedisStore({ url, keyPrefix: prefix, timeoutMs: 1000 }) : httpLimiter({ url, token: TOKEN });
  if (limiter instanceof RedisStore) await limiter.ready();
  const semaphore = createSemaphore({ limiter, key: "bench", policy: POLICY, maxWaitMs: 60_000 });
  // Warm up (connection, JIT) before the clock starts: start-up is not contention.
  await (await semaphore.acquire()).release();
  const go = new Promise((resolve) => process.once("message", resolve));
  process.send!("ready");
  await go;
  const acquisitions: Acquisition[] = [];
  for (let i = 0; i < ACQUISITIONS_PER_PROCESS; i++) {
    const sentAtMs = nowMs();
    await using _lease = await semaphore.acquire();
    acquisitions.push({ sentAtMs, grantedAtMs: nowMs() });
    await sleep(HOLD_MS);
  }
  process.send!(acquisitions);
  await limiter.close?.();
  process.disconnect();
}

async function contend(backend: string, url: string, prefix: string, processes: number): Promise<{ acquisitions: Acquisition[]; elapsedS: number }> {
  const script = fileURLToPath(import.meta.url);
  const children = Array.from({ length: processes }, () => fork(script, ["worker", backend, url, prefix]));
  const nextMessage = (child: (typeof children)[number]) =>
    new Promise<unknown>((resolve, reject) => {
      child.once("message", resolve);
      child.once("exit", (code) => (code === 0 ? undefined : reject(new Error(`worker exited with ${code}`))));
    });
  await Promise.all(children.map(nextMessage));
  const reports = children.map(nextMessage);
  const startMs = performance.now();
  for (const child of children) child.send("go");
  const acquisitions = (await Promise.all(reports)).flat() as Acquisition[];
  return { acquisitions, elapsedS: (performance.now() - startMs) / 1000 };
}

function row(backend: string, processes: number, acquisitions: Acquisition[], elapsedS: number, violations: number): string {
  const waits = acquisitions.map((item) => item.grantedAtMs - item.sentAtMs).sort((a, b) => a - b);
  const p = (q: number) => waits[Math.min(waits.length - 1, Math.floor(q * waits.length))]!.toFixed(1);
  return `| ${backend} | ${processes} | ${CAPACITY} | ${waits.length} | ${violations} | ${Math.round(waits.length / elapsedS)} | ${p(0.5)} | ${p(0.99)} |`;
}

/** Runs every backend and process count; answers a markdown table. */
export async function semaphoreTable(redisUrl: string | undefined): Promise<string> {
  const lines = [
    "| backend | processes | leases | acquisitions | order violations | acquisitions/s | wait p50 (ms) | wait p99 (ms) |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  const { limiter, violations } = audited(new MemoryStore());
  const server = await startServer({ config: parseConfig({}), limiter, port: 0, token: TOKEN });
  for (const processes of PROCESS_COUNTS) {
    const before = violations();
    const { acquisitions, elapsedS } = await contend("http", server.url, "", processes);
    lines.push(row("Node server (MemoryStore) via httpLimiter", processes, acquisitions, elapsedS, violations() - before));
  }
  await server.close();
  if (redisUrl) {
    const prefix = `spillway-bench-${process.pid}-${Date.now()}:`;
    for (const processes of PROCESS_COUNTS) {
      const audit = await redisAudit(redisUrl);
      const { acquisitions, elapsedS } = await contend("redis", redisUrl, prefix, processes);
      await new Promise((resolve) => setTimeout(resolve, 100)); // the last MONITOR lines
      lines.push(row("Redis, a RedisStore in each process", processes, acquisitions, elapsedS, audit.violations()));
      await audit.close();
    }
  }
  return lines.join("\n");
}

if (process.argv[2] === "worker") await worker(process.argv[3]!, process.argv[4]!, process.argv[5]!);
