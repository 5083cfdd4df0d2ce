// bench:worker — the Worker under `wrangler dev` (Durable Objects running locally), against
// the same app answering from an in-isolate memory store, side by side in one run.
import { type ChildProcess, spawn } from "node:child_process";
import { type LoadResult, runLoad, waitForHttp, writeBenchmarkSection } from "./load.js";

const TOKEN = "bench-token";
const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
const CONCURRENCY = 32;
const policy = { name: "bench", algorithm: "gcra", limit: 1_000_000, period: "1s" };

function startWrangler(configPath: string, port: number): ChildProcess {
  // Two dev servers at once each need their own inspector port.
  const args = ["dev", "--config", configPath, "--port", String(port), "--inspector-port", String(port + 1000), "--ip", "127.0.0.1", "--var", `SPILLWAY_TOKEN:${TOKEN}`, "--log-level", "error"];
  const child = spawn("wrangler", args, {
    // wrangler dev stops when its stdin closes: keep a pipe open; show its errors.
    stdio: ["pipe", "ignore", "inherit"],
    detached: true,
    env: { ...process.env, WRANGLER_SEND_METRICS: "false" },
  });
  return child;
}

function stop(child: ChildProcess): void {
  if (child.pid) {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

async function measure(url: string, keys: number): Promise<LoadResult> {
  const options = {
    url: `${url}/v1/check`,
    concurrency: CONCURRENCY,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: (index: number) => ({ key: keys === 1 ? "hot" : `key-${index % keys}`, policy }),
  };
  // Warm-up: isolates and sockets, and every key's object created once. The first touch of a
  // local Durable Object opens its own SQLite file; that is set-up, not the per-decision cost.
  await runLoad({ ...options, durationMs: 1500 });
  await runLoad({ ...options, requests: keys, durationMs: 120_000 });
  return runLoad({ ...options, durationMs: DURATION_MS });
}

const row = (label: string, result: LoadResult, baseline?: LoadResult) =>
  `| ${label} | ${Math.round(result.perSecond)} | ${result.p50Ms.toFixed(2)} | ${result.p99Ms.toFixed(2)} | ${baseline ? (result.perSecond / baseline.perSecond).toFixed(2) : "1.00"} | ${result.errors} |`;

async function main(): Promise<void> {
  const withDo = startWrangler("wrangler.toml", 8811);
  const withoutDo = startWrangler("scripts/bench/wrangler.baseline.toml", 8812);
  try {
    await Promise.all([waitForHttp("http://127.0.0.1:8811/healthz"), waitForHttp("http://127.0.0.1:8812/healthz")]);
    const lines = ["| scenario | decisions/s | p50 ms | p99 ms | ratio to no-DO | errors |", "| --- | ---: | ---: | ---: | ---: | ---: |"];
    for (const keys of [1, 1000]) {
      const label = keys === 1 ? "one hot key" : "1,000 keys";
      const baseline = await measure("http://127.0.0.1:8812", keys);
      const durable = await measure("http://127.0.0.1:8811", keys);
      lines.push(row(`${label}, no Durable Object`, baseline), row(`${label}, Durable Object per key`, durable, baseline));
      console.log(lines.slice(-2).join("\n"));
    }
    const markdown = [
      `\`npm run bench:worker\`: \`wrangler dev\` on loopback, ${CONCURRENCY} requests in flight, ${DURATION_MS / 1000} s per row after a warm-up, POST /v1/check with an inline GCRA policy.`,
      "The no-DO rows are the same Worker, `createWorker(config, { store })` deciding in an in-isolate memory store (scripts/bench/baseline-worker.ts): the ratio is what the Durable Object round trip costs.",
      "Local workerd on a 2-core machine shared with the load generator; production latencies differ, the ratio is what to read.",
      "",
      ...lines,
    ].join("\n");
    await writeBenchmarkSection("Worker (bench:worker)", markdown);
    console.log("\nwritten to BENCHMARKS.md");
  } finally {
    stop(withDo);
    stop(withoutDo);
  }
}

await main();
