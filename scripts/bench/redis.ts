// Benchmark of the Redis store: decisions per second and latency percentiles for a few
// workloads, against REDIS_URL or a throwaway redis-server on a free port.
//
//   node --experimental-transform-types --no-warnings --import ./scripts/ts-hooks.mjs scripts/bench/redis.ts
//   REDIS_URL=redis://127.0.0.1:6379 BENCH_SECONDS=5 BENCH_CONCURRENCY=64 node ... scripts/bench/redis.ts
import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { parsePolicy } from "../../src/core/policy.js";
import type { Policy } from "../../src/core/types.js";
import { RedisStore } from "../../src/stores/redis.js";

const seconds = Number(process.env.BENCH_SECONDS ?? 3);
const concurrency = Number(process.env.BENCH_CONCURRENCY ?? 32);

const gcra = parsePolicy({ name: "per-second", algorithm: "gcra", limit: 1_000_000, period: "1s" }, "policy");
const stack: Policy[] = [
  gcra,
  parsePolicy({ name: "per-minute", algorithm: "sliding-window", limit: 10_000_000, period: "1m" }, "policy"),
  parsePolicy({ name: "per-hour", algorithm: "fixed-window", limit: 100_000_000, period: "1h" }, "policy"),
];
const log = parsePolicy({ name: "log", algorithm: "sliding-log", limit: 100, period: "1s" }, "policy");

const WORKLOADS: { name: string; policies: Policy[]; key: (client: number, call: number) => string }[] = [
  { name: "gcra, one hot key", policies: [gcra], key: () => "hot" },
  { name: "gcra, 10k keys", policies: [gcra], key: (client, call) => `user:${(client * 7919 + call) % 10_000}` },
  { name: "3 stacked policies, 10k keys", policies: stack, key: (client, call) => `user:${(client * 7919 + call) % 10_000}` },
  { name: "sliding-log (100/s), 1k keys", policies: [log], key: (client, call) => `user:${(client * 7919 + call) % 1000}` },
];

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function redisUrl(): Promise<{ url: string; stop: () => void }> {
  if (process.env.REDIS_URL) return { url: process.env.REDIS_URL, stop: () => {} };
  const port = await freePort();
  const child = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], { stdio: "ignore" });
  await new Promise((resolve) => setTimeout(resolve, 300));
  return { url: `redis://127.0.0.1:${port}`, stop: () => child.kill("SIGTERM") };
}

function percentile(sorted: number[], fraction: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * fraction))] ?? Number.NaN;
}

const { url, stop } = await redisUrl();
const store = new RedisStore({ url, timeoutMs: 1000, keyPrefix: `bench${Date.now()}:` });
if (!(await store.ready(5000))) throw new Error(`cannot reach ${url}`);
console.log(`Redis store at ${url}: ${concurrency} concurrent callers, ${seconds} s per workload\n`);
console.log("workload                          decisions/s    p50 ms   p99 ms   max ms");
for (const workload of WORKLOADS) {
  const latenciesMs: number[] = [];
  const endAt = performance.now() + seconds * 1000;
  await Promise.all(
    Array.from({ length: concurrency }, async (_, client) => {
      for (let call = 0; performance.now() < endAt; call++) {
        const begin = performance.now();
        await store.check(workload.key(client, call), workload.policies, { cost: 1, mode: "reject", maxWaitMs: 0 });
        latenciesMs.push(performance.now() - begin);
      }
    }),
  );
  latenciesMs.sort((a, b) => a - b);
  const rate = Math.round(latenciesMs.length / seconds);
  const cells = [percentile(latenciesMs, 0.5), percentile(latenciesMs, 0.99), latenciesMs[latenciesMs.length - 1] ?? Number.NaN].map((ms) => ms.toFixed(2).padStart(8));
  console.log(`${workload.name.padEnd(32)} ${String(rate).padStart(12)} ${cells.join(" ")}`);
}
await store.close();
stop();
