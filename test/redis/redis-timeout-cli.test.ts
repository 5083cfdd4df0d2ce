import { spawn } from "node:child_process";
import { Agent, request } from "node:http";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { type Served, startServe } from "./serve-process.js";
import { ownerOfConnection } from "./socket-owner.js";

// `spillway serve --redis-timeout`, through the real CLI on a real redis-server made slow: a
// second connection's CLIENT PAUSE holds every command (its OK comes back once the pause is in
// force, so the decision sent next is certain to wait). With the default 50 ms a decision held
// for up to 1 s fails as "store unavailable" (503, failMode closed); with --redis-timeout 1s one
// held for up to 300 ms waits and is answered, in every worker of --workers 2. Each pause is far
// from the timeout it tests (a loaded machine delays the write, never the pause's end).

const bin = fileURLToPath(new URL("../../bin/spillway.mjs", import.meta.url));
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
let dir: string;
let redis: RedisServer;
let control: Redis;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "spillway-redis-timeout-"));
  writeFileSync(join(dir, "config.json"), JSON.stringify({ policies: [{ name: "demo", limit: 1_000_000, period: "10s" }] }));
  redis = await startRedis();
  control = new Redis(redis.url);
});
afterAll(async () => {
  control?.disconnect();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function serve(extra: string[]): Promise<Served> {
  const served = await startServe(["--config", "config.json", "--redis", redis.url, "--port", "0", "--no-metrics", ...extra], dir, { ...process.env, SPILLWAY_TOKEN: "t", REDIS_URL: undefined, REDIS_TIMEOUT: undefined });
  expect(served.port, served.output()).toBeGreaterThan(0);
  return served;
}

/** POST /v1/check on `agent`'s connection: the status, the body and the client's port. */
function check(port: number, agent: Agent): Promise<{ status: number; body: string; localPort: number }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method: "POST", path: "/v1/check", agent, headers: { authorization: "Bearer t", "content-type": "application/json" } }, (res) => {
      const localPort = res.socket.localPort!;
      let body = "";
      res.on("data", (chunk: Buffer) => (body += chunk.toString()));
      res.on("end", () => resolve({ status: res.statusCode!, body, localPort }));
    });
    req.on("error", reject);
    req.end(JSON.stringify({ key: `k-${Math.random()}`, policy: "demo" }));
  });
}

/** Decisions, one per agent's connection, sent while Redis holds every command for `pauseMs`. */
async function decideWhilePaused(port: number, agents: Agent[], pauseMs: number) {
  expect(await control.call("CLIENT", "PAUSE", String(pauseMs), "ALL")).toBe("OK");
  const answers = await Promise.all(agents.map((agent) => check(port, agent)));
  await sleep(pauseMs); // the pause over before anything else asks Redis
  return answers;
}

async function stop(served: Served): Promise<void> {
  served.child.kill("SIGTERM");
  expect(await served.exited, served.output()).toBe(0);
  expect(served.output()).not.toMatch(/^\s+at /m);
}

describe("spillway serve --redis-timeout", { timeout: 60_000 }, () => {
  it("with the default 50 ms, a decision Redis holds fails as store unavailable (503)", async () => {
    const served = await serve([]);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await check(served.port, agent)).status).toBe(200); // connected, scripts loaded
      const [answer] = await decideWhilePaused(served.port, [agent], 1000);
      expect(answer!.status, answer!.body).toBe(503);
      expect(answer!.body).toMatch(/the limiter store is unavailable and the policy fails closed: redis .* did not answer within 50 ms/);
      agent.destroy();
      await stop(served);
    } finally {
      agent.destroy();
      served.child.kill("SIGKILL");
    }
  });

  it("with --redis-timeout 1s, a decision Redis holds for 300 ms waits for it and is answered (200)", async () => {
    const served = await serve(["--redis-timeout", "1s"]);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect((await check(served.port, agent)).status).toBe(200);
      const [answer] = await decideWhilePaused(served.port, [agent], 300);
      expect(answer!.status, answer!.body).toBe(200);
      expect(served.output()).not.toMatch(/unavailable/);
      agent.destroy();
      await stop(served);
    } finally {
      agent.destroy();
      served.child.kill("SIGKILL");
    }
  });

  it("reaches every worker of --workers 2: both answer while Redis is paused", async () => {
    const served = await serve(["--redis-timeout", "1s", "--workers", "2"]);
    const agents = [new Agent({ keepAlive: true, maxSockets: 1 }), new Agent({ keepAlive: true, maxSockets: 1 })];
    try {
      const warm = await Promise.all(agents.map((agent) => check(served.port, agent)));
      expect(warm.map((answer) => answer.status)).toEqual([200, 200]);
      // One connection held by each worker (node:cluster hands them out in turn; read from /proc).
      const owners = warm.map((answer) => ownerOfConnection(served.port, answer.localPort, served.pids));
      expect(new Set(owners).size, JSON.stringify({ owners, pids: served.pids })).toBe(2);
      expect(owners.every((pid) => pid !== undefined)).toBe(true);
      const answers = await decideWhilePaused(served.port, agents, 300);
      expect(answers.map((answer) => answer.status), JSON.stringify(answers)).toEqual([200, 200]);
      for (const agent of agents) agent.destroy();
      await stop(served);
    } finally {
      for (const agent of agents) agent.destroy();
      served.child.kill("SIGKILL");
    }
  });

  it.each([
    ["0", /^spillway: --redis-timeout: must be from 1ms to 10s \(default 50ms\): 0 would fail every call/m],
    ["abc", /^spillway: --redis-timeout: must be a duration such as 250ms, 1s or 1s500ms \(or a number of milliseconds\), got "abc"$/m],
    ["1h", /^spillway: --redis-timeout: must be from 1ms to 10s/m],
    ["60s", /^spillway: --redis-timeout: must be from 1ms to 10s/m],
  ])("--redis-timeout %s: exit 2 naming the flag, nothing started", async (value, pattern) => {
    const child = spawn(process.execPath, [bin, "serve", "--config", "config.json", "--redis", redis.url, "--redis-timeout", value, "--workers", "2"], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr!.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise((resolve) => child.once("exit", resolve));
    expect(code).toBe(2);
    expect(output).toMatch(pattern);
    expect(output).not.toMatch(/listening/);
  });
});
