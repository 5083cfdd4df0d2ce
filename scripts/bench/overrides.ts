// bench:overrides — runtime overrides at scale, through the public entry points only:
// `spillway serve --redis` processes (the real CLI) sharing one redis-server, 100,000
// overrides PUT over /v1/overrides, and /v1/check load on one process while another takes
// one override change a second. Turns interleave three targets, so a shared machine's drift
// falls on all alike:
//   anchor   a `spillway serve` whose config's policy has no runtime overrides (nothing to follow)
//   steady   the process under test, 100,000 overrides, no changes
//   changing the same process while another process changes one override a second
// Goal (issue 30): `changing` p99 within 1.2x of `steady`. Then every page of
// GET /v1/overrides is read, and timed.
//
//   npm run bench:overrides [-- --bin PATH/bin/spillway.mjs]   (another build, e.g. an older commit)
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { type LoadResult, mergeLoads, runLoad, waitForHttp, writeBenchmarkSection } from "./load.js";
import { startRedis } from "../redis-server.js";
import { freePort } from "../free-port.js";

const { values: flags } = parseArgs({ options: { bin: { type: "string" }, "dry-run": { type: "boolean", default: false }, label: { type: "string" } } });
const BIN = flags.bin ?? fileURLToPath(new URL("../../bin/spillway.mjs", import.meta.url));
const TOKEN = "bench-token";
const OVERRIDES = 100_000;
const TURNS = 4;
const TURN_MS = 5000;
const CONCURRENCY = 16;
/** Each change is followed within half of this (and so every change makes the process under test catch up). */
const OVERRIDES_TTL = "1s";

interface Server {
  url: string;
  pid: number;
  stop(): void;
}

async function serve(configPath: string, redisUrl: string): Promise<Server> {
  const port = await freePort();
  const child: ChildProcess = spawn(process.execPath, [BIN, "serve", "--config", configPath, "--port", String(port), "--redis", redisUrl], {
    stdio: ["ignore", "ignore", "inherit"],
    env: { ...process.env, SPILLWAY_TOKEN: TOKEN },
  });
  const stop = () => {
    if (child.exitCode === null) child.kill("SIGTERM");
  };
  process.once("exit", stop);
  const url = `http://127.0.0.1:${port}`;
  await waitForHttp(`${url}/healthz`, 30_000);
  return { url, pid: child.pid!, stop };
}

/** CPU seconds a process has used so far (user + system, /proc; USER_HZ 100). */
function cpuSeconds(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

const headers = { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" };
const put = (url: string, body: unknown) => fetch(`${url}/v1/overrides`, { method: "PUT", headers, body: JSON.stringify(body) }).then(async (response) => {
  if (response.status !== 200) throw new Error(`PUT answered ${response.status}: ${await response.text()}`);
});

async function seed(url: string): Promise<number> {
  const startedMs = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next < OVERRIDES) {
        const i = next++;
        await put(url, { policy: "bench", key: `user-${i}`, limit: 2_000_000 + (i % 1000) });
      }
    }),
  );
  return performance.now() - startedMs;
}

/** One override changed a second through `url` until `stop` is set. */
async function changeEverySecond(url: string, stop: { now: boolean }): Promise<number> {
  let changes = 0;
  while (!stop.now) {
    const i = Math.floor(Math.random() * OVERRIDES);
    await put(url, { policy: "bench", key: `user-${i}`, limit: 3_000_000 + changes });
    changes++;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  return changes;
}

/** Every page in turn; a page that fails (a 503 when the store times out) is asked again, at most 5 times, and counted. */
async function listAll(url: string): Promise<{ pages: number; overrides: number; failed: number; ms: number }> {
  const startedMs = performance.now();
  let cursor: string | undefined;
  let pages = 0;
  let overrides = 0;
  let failed = 0;
  do {
    const response = await fetch(`${url}/v1/overrides?policy=bench${cursor ? `&cursor=${cursor}` : ""}`, { headers });
    if (response.status !== 200) {
      await response.text();
      if (++failed > 5) break;
      continue;
    }
    const page = (await response.json()) as { overrides: unknown[]; cursor?: string };
    overrides += page.overrides.length;
    cursor = page.cursor;
    pages++;
  } while (cursor);
  return { pages, overrides, failed, ms: performance.now() - startedMs };
}

type Target = "anchor" | "steady" | "changing";

async function main(): Promise<void> {
  const redis = await startRedis();
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-overrides-"));
  const policy = (name: string) => ({ name, algorithm: "fixed-window", limit: 1_000_000, period: "1m" });
  const configPath = join(dir, "spillway.config.json");
  const anchorPath = join(dir, "anchor.config.json");
  await writeFile(configPath, JSON.stringify({ overridesTtl: OVERRIDES_TTL, policies: [policy("bench")] }));
  await writeFile(anchorPath, JSON.stringify({ overridesTtl: OVERRIDES_TTL, policies: [policy("plain")] }));
  const changer = await serve(configPath, redis.url);
  const servers: Server[] = [changer];
  try {
    const seedMs = await seed(changer.url);
    console.log(`seeded ${OVERRIDES} overrides in ${(seedMs / 1000).toFixed(1)} s`);
    const underTest = await serve(configPath, redis.url);
    const anchor = await serve(anchorPath, redis.url);
    servers.push(underTest, anchor);
    const loadOf = (server: Server, policyName: string, durationMs: number) =>
      runLoad({ url: `${server.url}/v1/check`, concurrency: CONCURRENCY, durationMs, headers: { authorization: `Bearer ${TOKEN}` }, body: (i) => ({ key: `user-${(i * 7919) % OVERRIDES}`, policy: policyName }) });
    // Warm up: the first read of the table, JIT.
    await loadOf(underTest, "bench", 3000);
    await loadOf(anchor, "plain", 1000);
    const runs: Record<Target, LoadResult[]> = { anchor: [], steady: [], changing: [] };
    const cpu: Record<Target, number> = { anchor: 0, steady: 0, changing: 0 };
    let changes = 0;
    const order: Target[] = ["anchor", "steady", "changing"];
    for (let turn = 0; turn < TURNS; turn++) {
      for (const target of [...order.slice(turn % 3), ...order.slice(0, turn % 3)]) {
        const server = target === "anchor" ? anchor : underTest;
        const stop = { now: false };
        const changing = target === "changing" ? changeEverySecond(changer.url, stop) : Promise.resolve(0);
        const cpuBefore = cpuSeconds(server.pid);
        runs[target].push(await loadOf(server, target === "anchor" ? "plain" : "bench", TURN_MS));
        cpu[target] += cpuSeconds(server.pid) - cpuBefore;
        stop.now = true;
        changes += await changing;
        // Let the last change settle before a turn without changes.
        await new Promise((resolve) => setTimeout(resolve, 1500));
      }
    }
    const listing = await listAll(changer.url);
    const rows = order.map((target) => {
      const result = mergeLoads(runs[target]);
      return { target, result, cpuUsPerRequest: (cpu[target] * 1e6) / result.requests };
    });
    const steady = rows.find((row) => row.target === "steady")!;
    const labels: Record<Target, string> = {
      anchor: "anchor: `spillway serve`, its policy without runtime overrides",
      steady: `${OVERRIDES.toLocaleString("en-US")} overrides, no changes`,
      changing: `${OVERRIDES.toLocaleString("en-US")} overrides, one change a second (through another process)`,
    };
    const lines = [
      "| target | req/s | p50 ms | p99 ms | p99 vs no changes | CPU µs/request | non-200 | errors |",
      "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
      ...rows.map(({ target, result, cpuUsPerRequest }) => {
        const non200 = Object.entries(result.statuses).filter(([status]) => status !== "200").reduce((sum, [, count]) => sum + count, 0);
        return `| ${labels[target]} | ${Math.round(result.perSecond).toLocaleString("en-US")} | ${result.p50Ms.toFixed(2)} | ${result.p99Ms.toFixed(2)} | ${(result.p99Ms / steady.result.p99Ms).toFixed(2)} | ${cpuUsPerRequest.toFixed(0)} | ${non200} | ${result.errors} |`;
      }),
    ];
    const label = flags.label ?? "this commit";
    const markdown = [
      `${label}: \`npm run bench:overrides\`; redis-server ${await redis.version()}, Node ${process.version}, ${TURNS} turns of ${TURN_MS / 1000} s per target, interleaved, ${CONCURRENCY} requests in flight, /v1/check over ${OVERRIDES.toLocaleString("en-US")} keys that each have an override; \`overridesTtl: "${OVERRIDES_TTL}"\` (every change is followed within half a second); ${changes} changes made.`,
      "",
      ...lines,
      "",
      `Listing every page of \`GET /v1/overrides?policy=bench\`: ${listing.pages} pages, ${listing.overrides.toLocaleString("en-US")} overrides, ${(listing.ms / 1000).toFixed(2)} s${listing.failed > 0 ? ` (${listing.failed} pages answered an error and were asked again${listing.failed > 5 ? "; gave up" : ""})` : ""}. Seeding ${OVERRIDES.toLocaleString("en-US")} overrides with PUT (32 at a time): ${(seedMs / 1000).toFixed(1)} s.`,
    ].join("\n");
    console.log(markdown);
    if (!flags["dry-run"]) await writeBenchmarkSection("Overrides at scale (bench:overrides)", markdown);
  } finally {
    for (const server of servers) server.stop();
    await redis.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

await main();
