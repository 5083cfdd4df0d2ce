// bench:proxies: nginx in front of an origin, three ways, in one interleaved run: nginx alone,
// nginx with its own `limit_req`, and nginx asking `spillway serve` through `auth_request` (the
// nginx.conf of docs/proxies.md, as a user copies it); beside them `spillway serve` as the
// gateway itself. wrk drives each row in turn, round after round; each process group's CPU
// is read from /proc around each run, so the decision service's CPU per request stands beside
// the gateway's (on a loaded machine CPU per request holds better than requests per second).
import { type ChildProcess, spawn } from "node:child_process";
import { mkdir, mkdtemp, readFile, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { extractSnippets } from "../../test/package/snippets.js";
import { waitForHttp, writeBenchmarkSection } from "./load.js";
import { type WrkResult, groupCpuSeconds, runWrk } from "./wrk.js";

const SECONDS = Number(process.env.BENCH_SECONDS ?? 3);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
/** Per row before the rounds: Node's JIT and the keep-alive pools settle (the first seconds of a Node server run several times slower). */
const WARMUP_SECONDS = Number(process.env.BENCH_WARMUP_SECONDS ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONCURRENCY ?? 32);
const PORTS = { origin: 8890, nginxAlone: 8891, nginxLimitReq: 8892, nginxAuth: 8893, decision: 8894, gateway: 8895 };
const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const BIN = join(ROOT, "bin/spillway.mjs");
const children: ChildProcess[] = [];

function start(command: string, args: string[], env: Record<string, string> = {}): ChildProcess {
  const child = spawn(command, args, { stdio: ["ignore", "ignore", "inherit"], detached: true, env: { ...process.env, ...env } });
  children.push(child);
  return child;
}

function stopAll(): void {
  for (const child of children) {
    try {
      if (child.pid) process.kill(-child.pid, "SIGTERM");
    } catch {
      // Already gone.
    }
  }
}

/** A limit no run reaches: every request is decided and admitted, keyed by the client's address. */
async function writeSpillwayConfig(dir: string): Promise<string> {
  const path = join(dir, "spillway.config.json");
  const config = {
    origin: `http://127.0.0.1:${PORTS.origin}`,
    trustProxy: ["127.0.0.1"],
    policies: [{ name: "bench", algorithm: "gcra", limit: 1_000_000_000, period: "1s" }],
    routes: [{ match: { path: "/api/*" }, key: "ip", policies: ["bench"] }],
  };
  await writeFile(path, JSON.stringify(config));
  return path;
}

/** docs/proxies.md's nginx.conf with the bench's ports, and access logging off (as in the other two). */
async function authRequestConf(): Promise<string> {
  const docs = await readFile(join(ROOT, "docs/proxies.md"), "utf8");
  const block = extractSnippets("docs/proxies.md", docs).find((snippet) => snippet.lang === "nginx");
  if (!block) throw new Error("docs/proxies.md has no nginx block");
  return block.code
    .replaceAll("127.0.0.1:8080", `127.0.0.1:${PORTS.nginxAuth}`)
    .replaceAll("127.0.0.1:3000", `127.0.0.1:${PORTS.origin}`)
    .replaceAll("127.0.0.1:8787", `127.0.0.1:${PORTS.decision}`)
    .replace("http {", "http {\n  access_log off;");
}

/** nginx alone, or with limit_req per client address at a rate no run reaches: the same upstream keep-alive as the docs' recipe. */
function plainConf(port: number, limitReq: boolean): string {
  return `events { worker_connections 4096; }
http {
  access_log off;
  ${limitReq ? "limit_req_zone $binary_remote_addr zone=per_ip:10m rate=100000000r/s;" : ""}
  upstream app { server 127.0.0.1:${PORTS.origin}; keepalive 32; }
  server {
    listen 127.0.0.1:${port};
    location / {
      ${limitReq ? "limit_req zone=per_ip burst=1000 nodelay;" : ""}
      proxy_pass http://app;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
    }
  }
}
`;
}

async function startNginx(name: string, conf: string): Promise<ChildProcess> {
  const dir = await mkdtemp(join(tmpdir(), `spillway-bench-${name}-`));
  await mkdir(join(dir, "logs"));
  await writeFile(join(dir, "nginx.conf"), conf);
  return start("/usr/sbin/nginx", ["-p", dir, "-c", join(dir, "nginx.conf"), "-e", join(dir, "error.log"), "-g", `daemon off; pid ${join(dir, "nginx.pid")};`]);
}

interface Row {
  label: string;
  url: string;
  /** The process groups whose CPU is read: nginx's, Spillway's. */
  nginx?: ChildProcess;
  spillway?: ChildProcess;
  runs: { wrk: WrkResult; nginxCpu: number; spillwayCpu: number }[];
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), "spillway-bench-proxies-"));
  const configPath = await writeSpillwayConfig(dir);
  start(process.execPath, ["-e", `require("node:http").createServer((q, s) => s.end("ok")).listen(${PORTS.origin}, "127.0.0.1")`]);
  const serve = (port: number) => start(process.execPath, [BIN, "serve", "--config", configPath, "--store", "memory", "--no-metrics", "--port", String(port)], { SPILLWAY_TOKEN: "bench" });
  const decision = serve(PORTS.decision);
  const gateway = serve(PORTS.gateway);
  const rows: Row[] = [
    { label: "nginx alone", url: `http://127.0.0.1:${PORTS.nginxAlone}/api/hello`, nginx: await startNginx("alone", plainConf(PORTS.nginxAlone, false)), runs: [] },
    { label: "nginx + limit_req", url: `http://127.0.0.1:${PORTS.nginxLimitReq}/api/hello`, nginx: await startNginx("limitreq", plainConf(PORTS.nginxLimitReq, true)), runs: [] },
    { label: "nginx + Spillway auth_request (docs/proxies.md)", url: `http://127.0.0.1:${PORTS.nginxAuth}/api/hello`, nginx: await startNginx("auth", await authRequestConf()), spillway: decision, runs: [] },
    { label: "spillway serve as the gateway", url: `http://127.0.0.1:${PORTS.gateway}/api/hello`, spillway: gateway, runs: [] },
  ];
  try {
    for (const row of rows) await waitForHttp(row.url, 60_000);
    for (const row of rows) {
      const check = await fetch(row.url);
      if (check.status !== 200 || (await check.text()) !== "ok") throw new Error(`${row.label}: GET /api/hello answered ${check.status}`);
    }
    // Warm-up: JIT and keep-alive pools, not measured.
    for (const row of rows) await runWrk(row.url, CONNECTIONS, WARMUP_SECONDS);
    for (let round = 0; round < ROUNDS; round++) {
      for (const row of rows) {
        const spillwayBefore = row.spillway?.pid ? groupCpuSeconds(row.spillway.pid) : 0;
        const wrk = await runWrk(row.url, CONNECTIONS, SECONDS, row.nginx?.pid);
        const spillwayCpu = row.spillway?.pid ? groupCpuSeconds(row.spillway.pid) - spillwayBefore : 0;
        row.runs.push({ wrk, nginxCpu: wrk.cpuSeconds, spillwayCpu });
        console.log(`round ${round + 1} ${row.label}: ${wrk.perSecond.toFixed(0)} req/s, p50 ${wrk.p50Ms} ms, errors ${wrk.errors + wrk.non2xx}`);
      }
    }
  } finally {
    stopAll();
  }
  const alone = median(rows[0]!.runs.map((run) => run.wrk.perSecond));
  const usPer = (cpu: number[], requests: number[]) => (requests.reduce((a, b) => a + b, 0) > 0 ? (cpu.reduce((a, b) => a + b, 0) / requests.reduce((a, b) => a + b, 0)) * 1e6 : 0);
  const table = rows.map((row) => {
    const perSecond = median(row.runs.map((run) => run.wrk.perSecond));
    const requests = row.runs.map((run) => run.wrk.requests);
    const nginxUs = row.nginx ? usPer(row.runs.map((run) => run.nginxCpu), requests).toFixed(1) : "—";
    const spillwayUs = row.spillway ? usPer(row.runs.map((run) => run.spillwayCpu), requests).toFixed(1) : "—";
    const errors = row.runs.reduce((sum, run) => sum + run.wrk.errors + run.wrk.non2xx, 0);
    return `| ${row.label} | ${perSecond.toFixed(0)} | ${median(row.runs.map((run) => run.wrk.p50Ms)).toFixed(2)} | ${(perSecond / alone).toFixed(2)} | ${nginxUs} | ${spillwayUs} | ${errors} |`;
  });
  const load = (await readFile("/proc/loadavg", "utf8")).split(" ").slice(0, 3).join(" ");
  const markdown = `\`npm run bench:proxies\` (scripts/bench/proxies.ts): wrk, ${CONNECTIONS} connections, ${WARMUP_SECONDS} s of warm-up per row, then ${SECONDS} s per row, ${ROUNDS} rounds interleaved (every row once per round), medians; GET /api/hello to a node:http origin answering "ok".
nginx runs one worker. The auth_request row is docs/proxies.md's nginx.conf as written (ports substituted, access log off as in the other rows), asking \`spillway serve --store memory\` on a route keyed by ip with a limit no run reaches, so every request is decided and admitted; the gateway row is the same config served by \`spillway serve\` as the proxy itself.
CPU per request: each process group's user + system time from /proc around each run, divided by the requests wrk counted. Load average at the end: ${load} (a machine shared with other work: read the ratios and the CPU per request).

| row | req/s | p50 ms | ratio to nginx alone | nginx CPU µs/req | Spillway CPU µs/req | errors |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
${table.join("\n")}
`;
  console.log(markdown);
  if (process.env.BENCH_WRITE !== "0") await writeBenchmarkSection("Behind nginx: auth_request (bench:proxies)", markdown);
}

process.on("SIGINT", () => {
  stopAll();
  process.exit(130);
});
main().catch((error: unknown) => {
  stopAll();
  console.error(error);
  process.exit(1);
});
