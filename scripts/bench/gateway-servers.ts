// bench:gateway's servers: its settings and ports, the processes it starts and stops, their configs, nginx, CPU pinning.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdtemp, writeFile } from "node:fs/promises";
import { connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitForHttp } from "./load.js";
import { LABELS } from "./gateway-table.js";

export const DURATION_MS = Number(process.env.BENCH_DURATION_MS ?? 8000);
export const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
export const TOKEN = "bench-token";
export const PORTS = { origin: 8790, minimal: 8791, memory: 8792, redis: 8793, workerBare: 8794, worker: 8795, fastify: 8796, nginx: 8797, counted: 8798, overridden: 8799, memoryTwin: 8800, redisWorkers: 8801, countedPartner: 8802, overriddenPartner: 8803 };
/** BENCH_COMPARE_BIN's servers: the same pairings, each port this far up. */
export const COMPARE_PORT_OFFSET = 100;
export const COMPARE_BIN = process.env.BENCH_COMPARE_BIN;
export const PAIRED_ONLY = process.env.BENCH_PAIRED_ONLY === "1";
/** Paired rounds for the goals that compare two of our own rows: both loaded at once. */
export const PAIRED_ROUNDS = Number(process.env.BENCH_PAIRED_ROUNDS ?? 9);
export const PAIRED_SECONDS = 3;
// Two `wrangler dev` at once each need their own inspector port, else the second fails to bind.
export const INSPECTOR_PORTS = { workerBare: 9294, worker: 9295 };
export const ORIGIN_URL = `http://127.0.0.1:${PORTS.origin}`;
const children: ChildProcess[] = [];

/** `stdin: "pipe"` keeps the child's stdin open: `wrangler dev` may stop when its stdin closes. */
export function start(command: string, args: string[], env: Record<string, string> = {}, stdin: "ignore" | "pipe" = "ignore"): ChildProcess {
  const child = spawn(command, args, { stdio: [stdin, "ignore", "pipe"], detached: true, env: { ...process.env, WRANGLER_SEND_METRICS: "false", ...env } });
  let stderr = "";
  child.stderr?.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-2000);
  });
  // A missing binary is reported as a skipped row, not a crash.
  child.on("error", (error) => {
    stderr += String(error);
    child.emit("exit", -1);
  });
  (child as ChildProcess & { stderrTail: () => string }).stderrTail = () => stderr;
  children.push(child);
  return child;
}

export const stderrOf = (child: ChildProcess) => (child as ChildProcess & { stderrTail?: () => string }).stderrTail?.() ?? "";

export function stopAll(): void {
  for (const child of children) {
    if (!child.pid) continue;
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

/** Waits for a server, or explains why it never came: the row is then reported as skipped. */
export async function ready(url: string, child: ChildProcess, timeoutMs = 30_000): Promise<string | undefined> {
  const exited = new Promise<string>((resolve) => child.once("exit", (code) => resolve(`exited with ${code}: ${stderrOf(child).trim().split("\n").slice(-2).join(" ")}`)));
  return Promise.race([waitForHttp(url, timeoutMs).then(() => undefined, (error: Error) => error.message), exited]);
}

/** `route` adds fields to the bench's one route (the counted row's `count`); `top` to the file (overrides). */
export async function writeConfig(route: Record<string, unknown> = {}, top: Record<string, unknown> = {}): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-"));
  const path = join(dir, "spillway.config.json");
  const config = {
    origin: ORIGIN_URL,
    // A limit no benchmark reaches: every request is decided and admitted.
    policies: [{ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
    routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["bench"], ...route }],
    ...top,
  };
  await writeFile(path, JSON.stringify(config));
  return path;
}

export type Target = { label: string; url: string; child?: ChildProcess; skip?: string };

/** Starts nothing: checks a target is up and really proxies, or says why it is skipped. */
export async function probe(target: Target): Promise<string | undefined> {
  if (target.skip) return target.skip;
  const problem = target.child ? await ready(`${target.url}/healthz`, target.child) : undefined;
  if (problem) return problem;
  // A gateway that is not wired answers 404 for /api/*: that is no measurement.
  const response = await fetch(`${target.url}/api/hello`);
  return response.status === 200 ? undefined : `GET /api/hello answered ${response.status}`;
}

/** Moves a process and all its threads to one CPU (taskset); false when that cannot be done. */
export function pinCpu(pid: number | undefined, cpu: number): boolean {
  if (pid === undefined) return false;
  const result = spawnSync("taskset", ["-a", "-p", "-c", String(cpu), String(pid)], { stdio: "ignore" });
  return result.status === 0;
}

/** nginx with one worker, `limit_req` per client address at a rate no run reaches, keep-alive to the origin. */
export async function nginxTarget(): Promise<Target> {
  const label = LABELS.nginx;
  const which = spawn("nginx", ["-v"], { stdio: "ignore" });
  const installed = await new Promise<boolean>((resolve) => {
    which.once("error", () => resolve(false));
    which.once("exit", (code) => resolve(code === 0));
  });
  if (!installed) return { label, url: "", skip: "not installed (apt-get install nginx)" };
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-nginx-"));
  const conf = `worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi; uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  limit_req_zone $binary_remote_addr zone=per_ip:10m rate=100000000r/s;
  upstream origin { server 127.0.0.1:${PORTS.origin}; keepalive 64; }
  server {
    listen 127.0.0.1:${PORTS.nginx};
    location = /healthz { return 200; }
    location / { limit_req zone=per_ip burst=1000 nodelay; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_pass http://origin; }
  }
}
`;
  await writeFile(join(dir, "nginx.conf"), conf);
  return { label, url: `http://127.0.0.1:${PORTS.nginx}`, child: start("nginx", ["-p", dir, "-c", join(dir, "nginx.conf"), "-g", "daemon off;"]) };
}

/**
 * Refuses to start when one of the bench's ports already answers: a server left running there
 * (an origin, say) would be measured in place of the one this run starts, whose own start fails.
 */
export async function takenPorts(): Promise<number[]> {
  const taken: number[] = [];
  const ports = Object.values(PORTS);
  if (COMPARE_BIN) ports.push(...ports.map((port) => port + COMPARE_PORT_OFFSET));
  for (const port of ports) {
    const answered = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (answered) taken.push(port);
  }
  return taken;
}
