import { spawn } from "node:child_process";
import { request } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { type Served, startServe } from "./serve-process.js";
import { configDir, d, rlsClient } from "../unit/node/grpc/rls-helpers.js";

// `spillway serve --workers 2` on a real Redis: the ports shared, one /metrics summing every
// worker, SIGHUP reaching every worker (a bad file none), a killed worker replaced with one
// line, SIGTERM draining them all.

const bin = fileURLToPath(new URL("../../bin/spillway.mjs", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let dir: string;
let redis: RedisServer;

const policies = [{ name: "demo", limit: 1_000_000, period: "10s" }];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "spillway-workers-"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ policies }));
  redis = await startRedis();
});
afterAll(async () => {
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** One request on a connection of its own: cluster hands connections to workers in turn. */
function call(port: number, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, agent: false, headers: { authorization: "Bearer t", connection: "close" } }, (res) => {
      let text = "";
      res.on("data", (chunk: Buffer) => (text += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, text }));
    });
    req.on("error", reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

const check = (port: number, policy: string) => call(port, "POST", "/v1/check", { key: `k-${Math.random()}`, policy });

/** The sum of a counter's samples in an exposition, matching `selector` (a metric name and labels). */
function sample(text: string, selector: RegExp): number {
  return text
    .split("\n")
    .filter((line) => selector.test(line))
    .reduce((sum, line) => sum + Number(line.split(" ").at(-1)), 0);
}

async function serveWorkers(extra: string[] = [], config = ["--config", "config.json"]): Promise<Served> {
  const served = await startServe([...config, "--redis", redis.url, "--port", "0", "--workers", "2", ...extra], dir, { ...process.env, SPILLWAY_TOKEN: "t", REDIS_URL: undefined });
  expect(served.pids, served.output()).toHaveLength(2);
  return served;
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("spillway serve --workers 2", { timeout: 60_000 }, () => {
  it("shares the port, sums every worker's metrics, reloads all or none, replaces a dead worker, drains on SIGTERM", async () => {
    const served = await serveWorkers();
    const { port } = served;
    try {
      expect(served.output()).toMatch(/^spillway: listening on http:\/\/127\.0\.0\.1:\d+ \(store: redis\)$/m);
      expect(served.output().match(/listening on/g)).toHaveLength(1);

      for (let i = 0; i < 40; i++) expect((await check(port, "demo")).status).toBe(200);
      // Each worker's own stats: both served some of the 40.
      const perWorker = new Set<number>();
      for (let i = 0; i < 12; i++) perWorker.add(JSON.parse((await call(port, "GET", "/v1/stats")).text).policies.demo.allowed);
      expect([...perWorker].some((count) => count > 0 && count < 40), JSON.stringify([...perWorker])).toBe(true);
      // Whichever worker answers /metrics, it is the sum of both.
      for (let i = 0; i < 4; i++) {
        const metrics = (await call(port, "GET", "/metrics")).text;
        expect(sample(metrics, /^spillway_decisions_total\{policy="demo",outcome="allowed"\}/)).toBe(40);
        expect(sample(metrics, /^spillway_decision_duration_seconds_count\{store="redis"\}/)).toBe(40);
        expect(sample(metrics, /^spillway_store_up\{store="redis"\}/)).toBe(1);
        expect(metrics).toMatch(/^spillway_decision_duration_seconds_bucket\{le="\+Inf",store="redis"\} 40$/m);
      }

      // SIGHUP, a good file: every worker takes it (one log line, from the primary, naming the policy whose algorithm changed).
      writeFileSync(join(dir, "config.json"), JSON.stringify({ policies: [{ ...policies[0], algorithm: "fixed-window" }, { name: "added", limit: 5, period: "1m" }] }));
      served.child.kill("SIGHUP");
      for (let i = 0; i < 100 && !/"result":"ok"/.test(served.output()); i++) await sleep(50);
      await sleep(200);
      for (let i = 0; i < 8; i++) expect((await check(port, "added")).status).toBe(200);
      // A bad file: none takes it, every worker keeps "added"; one line naming the field.
      writeFileSync(join(dir, "config.json"), JSON.stringify({ policies: [{ name: "demo", limit: -1, period: "10s" }] }));
      served.child.kill("SIGHUP");
      for (let i = 0; i < 100 && !/"result":"error"/.test(served.output()); i++) await sleep(50);
      await sleep(200);
      for (let i = 0; i < 8; i++) expect((await check(port, "added")).status).toBe(200);
      const reloadLines = served.output().split("\n").filter((line) => line.includes('"config-reload"'));
      expect(reloadLines, served.output()).toHaveLength(2);
      expect(JSON.parse(reloadLines[0]!)).toMatchObject({ result: "ok", startFresh: [{ policy: "demo", from: "gcra", to: "fixed-window" }] });
      expect(JSON.parse(reloadLines[1]!)).toMatchObject({ result: "error", field: "policies.demo.limit" });
      const metrics = (await call(port, "GET", "/metrics")).text;
      expect(sample(metrics, /^spillway_config_reloads_total\{result="ok"\}/)).toBe(1);
      expect(sample(metrics, /^spillway_config_reloads_total\{result="error"\}/)).toBe(1);
      expect(sample(metrics, /^spillway_config_generation /)).toBe(2);

      // A worker killed: one line, another started, requests keep being answered.
      process.kill(served.pids[0]!, "SIGKILL");
      for (let i = 0; i < 100 && !/starting another/.test(served.output()); i++) await sleep(50);
      const restarts = served.output().split("\n").filter((line) => line.includes("exited"));
      expect(restarts).toEqual([`spillway: worker 1 (pid ${served.pids[0]}) exited (signal SIGKILL); starting another`]);
      for (let i = 0; i < 20; i++) expect((await check(port, "demo")).status).toBe(200);
      // The dead worker's counts stay in the sum (workers-replaced.test.ts), with the survivor's and the replacement's.
      expect(sample((await call(port, "GET", "/metrics")).text, /^spillway_decisions_total\{policy="demo",outcome="allowed"\}/)).toBeGreaterThanOrEqual(20);

      served.child.kill("SIGTERM");
      expect(await served.exited, served.output()).toBe(0);
      expect(served.output()).toContain("shutting down every worker");
      for (const pid of served.pids) expect(alive(pid)).toBe(false);
      expect(served.output()).not.toMatch(/^\s+at /m);
    } finally {
      served.child.kill("SIGKILL");
    }
  });

  it("shares the RLS port: a limit holds across workers and connections, SIGHUP's --rls-config reaches every worker (a bad file none)", async () => {
    const limits = (perHour: number) => `domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: ${perHour} }\n`;
    const rlsDir = await configDir({ "limits.yaml": limits(3) });
    const served = await serveWorkers(["--rls-port", "0", "--rls-config", rlsDir], []);
    // Connections of their own (no shared subchannel): cluster hands them to the workers in turn.
    const address = /rate limit service \(gRPC\) on (\S+),/.exec(served.output())?.[1];
    const clients = Array.from({ length: 4 }, () => rlsClient(address!, undefined, { "grpc.use_local_subchannel_pool": 1 }));
    const user = `u-${Date.now()}`;
    try {
      const codes = [];
      for (const client of [...clients, ...clients]) codes.push((await client.ask("app", [d(["user", user])])).overall_code);
      expect(codes.filter((code) => code === "OK")).toHaveLength(3);
      writeFileSync(join(rlsDir, "limits.yaml"), limits(-4));
      served.child.kill("SIGHUP");
      for (let i = 0; i < 100 && !/reload refused/.test(served.output()); i++) await sleep(50);
      expect(served.output().match(/rls: reload refused/g)).toHaveLength(1);
      writeFileSync(join(rlsDir, "limits.yaml"), limits(20));
      served.child.kill("SIGHUP");
      for (let i = 0; i < 100 && !/rls: reloaded/.test(served.output()); i++) await sleep(50);
      await sleep(300);
      // Every connection, so every worker, decides on the new limit: 8 used of 20.
      for (const client of clients) expect((await client.ask("app", [d(["user", user])], { hitsAddend: 0 })).statuses[0]).toMatchObject({ current_limit: { requests_per_unit: 20 } });
      served.child.kill("SIGTERM");
      expect(await served.exited, served.output()).toBe(0);
    } finally {
      for (const client of clients) client.close();
      served.child.kill("SIGKILL");
      rmSync(rlsDir, { recursive: true, force: true });
    }
  });

  it.each([
    [["--workers", "0"], /--workers: must be a number of processes from 1 to 1024, or auto/],
    [["--workers", "abc"], /--workers: must be a number of processes/],
  ])("%j: exit 2 naming --workers", async (flags, pattern) => {
    const child = spawn(process.execPath, [bin, "serve", "--config", "config.json", "--redis", redis.url, ...flags], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(output).toMatch(pattern);
  });
});
