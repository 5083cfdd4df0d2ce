// Peak RSS of `spillway serve --store memory` under a flood of distinct keys (issue 45, 17):
// the process as a user starts it (bin/spillway.mjs, its own Node, default heap), a gateway
// route keyed by a header whose stack is a sliding log and a fixed window (two states a key,
// the log the heaviest rate state), KEYS distinct 230-byte keys, one request each, 16
// connections. Read from /proc: VmHWM (the peak resident set) and VmRSS at the end.
//
//   node --import ./bin/ts-hooks.mjs scripts/bench/memory-peak.ts KEYS [--memory-max-keys N] [--log-only]
// prints one JSON line: { keys, maxKeys, statesPerKey, peakRssMB, endRssMB, requestsPerSecond }
import { spawn } from "node:child_process";
import { readFileSync, writeFileSync, mkdtempSync } from "node:fs";
import http from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

const keys = Number(process.argv[2] ?? 200_000);
const maxKeysFlag = process.argv.indexOf("--memory-max-keys");
const maxKeys = maxKeysFlag > 0 ? Number(process.argv[maxKeysFlag + 1]) : 100_000;
// --log-only: the route's stack is the sliding log alone (one state a key: the bound holds twice the keys).
const logOnly = process.argv.includes("--log-only");
const CONNECTIONS = 16;
const KEY_LENGTH = 230;

const origin = http.createServer((_req, res) => res.writeHead(204).end());
await new Promise<void>((resolve) => origin.listen(0, "127.0.0.1", resolve));
const originPort = (origin.address() as { port: number }).port;
const dir = mkdtempSync(join(tmpdir(), "spillway-peak-"));
const configPath = join(dir, "spillway.config.json");
writeFileSync(
  configPath,
  JSON.stringify({
    origin: `http://127.0.0.1:${originPort}`,
    policies: [
      { name: "minute", algorithm: "sliding-log", limit: 100, period: "1m" },
      { name: "daily", algorithm: "fixed-window", limit: 10000, period: "1d" },
    ],
    routes: [{ match: { path: "/api/*" }, key: "header:x-api-key", policies: logOnly ? ["minute"] : ["minute", "daily"] }],
  }),
);
const bin = new URL("../../bin/spillway.mjs", import.meta.url).pathname;
const child = spawn(process.execPath, [bin, "serve", "--config", configPath, "--store", "memory", "--memory-max-keys", String(maxKeys), "--port", "0"], { env: { ...process.env, SPILLWAY_TOKEN: "peak-token" }, stdio: ["ignore", "pipe", "pipe"] });
let output = "";
child.stdout!.on("data", (chunk) => (output += chunk));
child.stderr!.on("data", (chunk) => (output += chunk));
const port = await new Promise<number>((resolve, reject) => {
  const timer = setInterval(() => {
    const match = /listening on http:\/\/[^:]+:(\d+)/.exec(output);
    if (match) {
      clearInterval(timer);
      resolve(Number(match[1]));
    } else if (child.exitCode !== null) reject(new Error(output));
  }, 20);
});

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS });
const keyOf = (i: number) => `k${i}:`.padEnd(KEY_LENGTH, "x");
const get = (key: string) =>
  new Promise<void>((resolve, reject) => {
    const request = http.request({ agent, host: "127.0.0.1", port, path: "/api/x", headers: { "x-api-key": key } }, (response) => {
      if (response.statusCode !== 204) reject(new Error(`the gateway answered ${response.statusCode}`));
      response.resume();
      response.on("end", resolve);
    });
    request.on("error", reject);
    request.end();
  });
const startedMs = performance.now();
let next = 0;
await Promise.all(
  Array.from({ length: CONNECTIONS }, async () => {
    while (next < keys) await get(keyOf(next++));
  }),
);
const seconds = (performance.now() - startedMs) / 1000;
const status = readFileSync(`/proc/${child.pid}/status`, "utf8");
const kB = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)![1]);
console.log(JSON.stringify({ keys, maxKeys, statesPerKey: logOnly ? 1 : 2, peakRssMB: Math.round(kB("VmHWM") / 1024), endRssMB: Math.round(kB("VmRSS") / 1024), requestsPerSecond: Math.round(keys / seconds) }));
agent.destroy();
child.kill("SIGTERM");
origin.close();
