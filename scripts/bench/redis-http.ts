// Part 2 of bench:redis: end to end over HTTP. `spillway serve --redis` (the real CLI, its
// own process) against the minimal node:http server that parses the same JSON and answers
// the same decision from RedisStore.check (scripts/bench/redis-bare-server.ts), both loaded by runLoad in
// alternating turns, so that a shared machine's drift falls on both alike.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { type LoadResult, mergeLoads, runLoad, waitForHttp } from "./load.js";
import { SERVER_POLICY } from "./redis-policies.js";
import { freePort } from "../free-port.js";

export interface HttpOptions {
  redisUrl: string;
  concurrency: number;
  keyCounts: readonly number[];
  /** Measured per server and key count, in `turns` turns. */
  durationMs: number;
  turns: number;
  warmUpMs: number;
}

export interface HttpRow {
  server: "bare" | "spillway";
  keyCount: number;
  result: LoadResult;
  /** The server process's CPU (user + system, /proc) per answered request. */
  cpuUsPerRequest: number;
}

const TOKEN = "bench-token";

interface Child {
  url: string;
  pid: number;
  stop(): void;
}

const pathOf = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));
const SPILLWAY_BIN = pathOf("../../bin/spillway.mjs");
const BARE_SERVER = pathOf("./redis-bare-server.ts");

/** Runs a Node process with this Node (the pinned one, which runs tsx's loader too). */
async function startNode(args: string[], port: number, env: Record<string, string> = {}): Promise<Child> {
  const child: ChildProcess = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "inherit"], env: { ...process.env, ...env } });
  const stop = () => {
    if (child.exitCode === null && child.pid !== undefined) child.kill("SIGTERM");
  };
  process.once("exit", stop);
  const url = `http://127.0.0.1:${port}`;
  try {
    await waitForHttp(`${url}/healthz`, 30_000);
  } catch (error) {
    stop();
    throw error;
  }
  return { url, pid: child.pid!, stop };
}

const CLOCK_TICKS_PER_SECOND = 100; // USER_HZ on Linux

/** CPU seconds a process has used so far (user + system). */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces) start at ") ".
  const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

function loadOf(url: string, keyCount: number, options: HttpOptions) {
  return {
    url: `${url}/v1/check`,
    concurrency: options.concurrency,
    headers: { authorization: `Bearer ${TOKEN}` },
    body: (index: number) => ({ key: keyCount === 1 ? "hot" : `user-${index % keyCount}`, policy: "bench" }),
  };
}

export async function runHttp(options: HttpOptions, progress: (line: string) => void): Promise<HttpRow[]> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-redis-"));
  const children: Child[] = [];
  try {
    const configPath = join(dir, "spillway.config.json");
    await writeFile(configPath, JSON.stringify({ policies: [SERVER_POLICY] }));
    const [barePort, spillwayPort] = [await freePort(), await freePort()];
    const bare = await startNode(["--import", "tsx", BARE_SERVER, String(barePort), options.redisUrl], barePort);
    children.push(bare);
    const spillwayArgs = [SPILLWAY_BIN, "serve", "--config", configPath, "--port", String(spillwayPort), "--redis", options.redisUrl];
    const spillway = await startNode(spillwayArgs, spillwayPort, { SPILLWAY_TOKEN: TOKEN });
    children.push(spillway);
    const rows: HttpRow[] = [];
    const servers = [["bare", bare], ["spillway", spillway]] as const;
    for (const keyCount of options.keyCounts) {
      for (const [, child] of servers) await runLoad({ ...loadOf(child.url, keyCount, options), durationMs: options.warmUpMs });
      const turns = { bare: [] as LoadResult[], spillway: [] as LoadResult[] };
      const cpu = { bare: 0, spillway: 0 };
      for (let turn = 0; turn < options.turns; turn++) {
        // Each turn starts with the other server.
        for (const [server, child] of turn % 2 === 0 ? servers : [...servers].reverse()) {
          const cpuBefore = cpuSeconds(child.pid);
          turns[server].push(await runLoad({ ...loadOf(child.url, keyCount, options), durationMs: options.durationMs / options.turns }));
          cpu[server] += cpuSeconds(child.pid) - cpuBefore;
        }
      }
      for (const [server] of servers) {
        const result = mergeLoads(turns[server]);
        const cpuUsPerRequest = (cpu[server] / Math.max(1, result.requests)) * 1e6;
        rows.push({ server, keyCount, result, cpuUsPerRequest });
        progress(`${server.padEnd(9)} ${String(keyCount).padStart(5)} keys  ${Math.round(result.perSecond)} req/s  p50 ${result.p50Ms.toFixed(2)}  p99 ${result.p99Ms.toFixed(2)}  ${cpuUsPerRequest.toFixed(0)} µs CPU/request  statuses ${JSON.stringify(result.statuses)}  errors ${result.errors}`);
      }
    }
    return rows;
  } finally {
    for (const child of children) child.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

const LABELS = { bare: "minimal `node:http` server, one `RedisStore.check` per request", spillway: "`spillway serve --redis` (GCRA, one FCALL per request)" };

export function httpTable(rows: readonly HttpRow[]): string[] {
  const lines = [
    "| server | keys | req/s | p50 ms | p99 ms | server CPU µs/request | req/s vs bare | CPU vs bare | other answers | errors |",
    "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
  ];
  for (const row of rows) {
    const bare = rows.find((other) => other.server === "bare" && other.keyCount === row.keyCount);
    const ratio = bare ? (row.result.perSecond / bare.result.perSecond).toFixed(2) : "–";
    const cpuRatio = bare ? (row.cpuUsPerRequest / bare.cpuUsPerRequest).toFixed(2) : "–";
    const others = Object.entries(row.result.statuses).filter(([status]) => status !== "200");
    const non200 = others.length === 0 ? "0" : others.map(([status, count]) => `${count} × ${status}`).join(", ");
    const { perSecond, p50Ms, p99Ms, errors } = row.result;
    lines.push(`| ${LABELS[row.server]} | ${row.keyCount.toLocaleString("en-US")} | ${Math.round(perSecond).toLocaleString("en-US")} | ${p50Ms.toFixed(2)} | ${p99Ms.toFixed(2)} | ${row.cpuUsPerRequest.toFixed(0)} | ${ratio} | ${cpuRatio} | ${non200} | ${errors} |`);
  }
  return lines;
}
