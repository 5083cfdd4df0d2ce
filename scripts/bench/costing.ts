// bench:costing — what reading a counted answer's usage costs `spillway serve` (docs/counting.md,
// "A costed answer is always charged"): the gateway process's CPU (from /proc, so the client's
// own work is not counted) and the time until the debit lands, for a brotli bomb (3 KB that
// decode to 2 GiB: the decoder stops at maxReadBytes), a gzip JSON answer of 2 MiB (decoded
// for the reader) and a plain 32 MiB JSON answer (scanned as it streams, the path's value kept).
// BENCH_SERVE_BIN runs another build of the CLI (default bin/spillway.mjs).
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, writeFile } from "node:fs/promises";
import http from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import zlib from "node:zlib";
import { waitForHttp, writeBenchmarkSection } from "./load.js";

const TOKEN = "bench-token";
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const LIMIT = 1_000_000_000;
const BOMB = readFileSync(new URL("../../test/unit/fixtures/bomb-2gib-spaces.br", import.meta.url));
const json = (bytes: number, tokens: number) => Buffer.from(JSON.stringify({ choices: [{ message: { content: "x".repeat(bytes) } }], usage: { total_tokens: tokens } }));
const BIG = json(32 * 1024 * 1024, 777);
const GZIP = zlib.gzipSync(json(2 * 1024 * 1024, 555));

interface Case {
  label: string;
  path: string;
  /** What the debit must reach. */
  cost: number;
}
const CASES: Case[] = [
  { label: "brotli bomb, 3 KB → 2 GiB (decoded to maxReadBytes, 8 MiB)", path: "/bomb/a", cost: 60_000 },
  { label: "gzip JSON, 2 MiB decoded", path: "/gzip/a", cost: 555 },
  { label: "plain JSON, 32 MiB, usage at the end", path: "/big/a", cost: 777 },
];

function startOrigin(): Promise<{ url: string; server: http.Server }> {
  const server = http.createServer((req, res) => {
    if (req.url!.startsWith("/bomb")) return void res.writeHead(200, { "content-type": "application/json", "content-encoding": "br" }).end(BOMB);
    if (req.url!.startsWith("/gzip")) return void res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" }).end(GZIP);
    res.writeHead(200, { "content-type": "application/json" }).end(BIG);
  });
  return new Promise((resolve) => server.listen(0, "127.0.0.1", () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` })));
}

/** The process's CPU so far, user + system, in ms (Linux /proc; 100 ticks a second). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

function get(url: string, user: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, { headers: { "x-user": user }, agent: false }, (res) => {
      let bytes = 0;
      res.on("data", (chunk: Buffer) => (bytes += chunk.length));
      res.on("end", () => resolve(bytes));
    }).on("error", reject);
  });
}

async function spent(base: string, user: string): Promise<number> {
  const answer = await fetch(`${base}/v1/peek`, { method: "POST", headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" }, body: JSON.stringify({ key: `header:x-user:${user}`, policy: "budget" }) });
  return LIMIT - ((await answer.json()) as { remaining: number }).remaining;
}

async function main(): Promise<void> {
  const origin = await startOrigin();
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-costing-"));
  const config = join(dir, "spillway.config.json");
  const cost = { responseJson: "usage.total_tokens", max: 60_000 };
  await writeFile(
    config,
    JSON.stringify({
      origin: origin.url,
      policies: [{ name: "budget", algorithm: "fixed-window", limit: LIMIT, period: "1h" }],
      routes: ["/bomb/*", "/gzip/*", "/big/*"].map((path) => ({ match: { path }, key: "header:x-user", policies: ["budget"], cost })),
    }),
  );
  const port = 18000 + Math.floor(Math.random() * 2000);
  const child: ChildProcess = spawn("node", [process.env.BENCH_SERVE_BIN ?? "bin/spillway.mjs", "serve", "--config", config, "--port", String(port), "--store", "memory"], { stdio: "ignore", env: { ...process.env, SPILLWAY_TOKEN: TOKEN } });
  const base = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${base}/healthz`);
    const rows: string[] = [];
    for (const item of CASES) {
      const cpu: number[] = [];
      const debitMs: number[] = [];
      for (let round = 0; round < ROUNDS; round++) {
        const user = `${item.path}-${round}`;
        const cpuBefore = cpuMsOf(child.pid!);
        const started = performance.now();
        await get(`${base}${item.path}`, user);
        while ((await spent(base, user)) < item.cost) await new Promise((resolve) => setTimeout(resolve, 2));
        debitMs.push(performance.now() - started);
        cpu.push(cpuMsOf(child.pid!) - cpuBefore);
      }
      const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
      rows.push(`| ${item.label} | ${median(cpu).toFixed(0)} | ${median(debitMs).toFixed(0)} | ${item.cost} |`);
      console.log(rows.at(-1));
    }
    await writeBenchmarkSection(
      "Costed answers (bench:costing)",
      [
        `\`spillway serve --store memory\`, one request at a time, median of ${ROUNDS}; CPU is the gateway process's (/proc, 10 ms ticks), the time runs from the request to the debit seen by \`/v1/peek\` (which adds a request of its own).`,
        "",
        "| answer | gateway CPU (ms) | until debited (ms) | debited |",
        "| --- | --- | --- | --- |",
        ...rows,
        "",
        "Before this reader (issue 30 row 3) the bomb was decoded whole: 8.8 s of CPU and 28.8 s until its debit of `missing` (1), measured with the same fixture in-process; a JSON answer over 1 MiB cost `missing`.",
      ].join("\n"),
    );
  } finally {
    child.kill("SIGTERM");
    origin.server.close();
  }
}

await main();
