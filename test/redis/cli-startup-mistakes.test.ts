import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// The mistakes people make starting `spillway serve`, as a table: each names its cause in
// the output and ends with the exit code it should (or keeps serving, when serving with
// failMode is the right answer, and then stops cleanly on SIGTERM).

const bin = fileURLToPath(new URL("../../bin/spillway.mjs", import.meta.url));
let dir: string;
let redis: RedisServer;
let busy: Server;
let busyPort: number;
let downPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "spillway-mistakes-"));
  writeFileSync(join(dir, "good.json"), JSON.stringify({ policies: [{ name: "demo", limit: 3, period: "10s" }] }));
  writeFileSync(join(dir, "broken.json"), '{ "policies": [ { "name": "demo", "limit": 3, } ] }');
  redis = await startRedis();
  busy = createServer();
  busyPort = await freePort();
  await new Promise<void>((resolve) => busy.listen(busyPort, "127.0.0.1", resolve));
  downPort = await freePort();
});

afterAll(async () => {
  busy?.close();
  await redis?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Ended {
  /** The exit code, or "serves" when it was still serving (and then stopped by SIGTERM). */
  exit: number | "serves";
  /** When it served: its exit code after the SIGTERM (0 for a clean stop). */
  stoppedCode?: number | null;
  output: string;
}

/** Runs `spillway serve ARGS` until it exits, or until `servingOnce` shows in its output (then SIGTERM). */
function serve(args: string[], servingOnce: RegExp, env: Record<string, string | undefined> = {}): Promise<Ended> {
  const child: ChildProcess = spawn(process.execPath, [bin, "serve", ...args], { cwd: dir, env: { ...process.env, SPILLWAY_TOKEN: "t", REDIS_URL: undefined, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let serving = false;
  return new Promise((resolve) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      if (!serving && /listening on/.test(output) && servingOnce.test(output)) {
        serving = true;
        child.kill("SIGTERM");
      }
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("exit", (code) => resolve(serving ? { exit: "serves", stoppedCode: code, output } : { exit: code ?? -1, output }));
  });
}

describe("spillway serve: startup mistakes name their cause", () => {
  const memory = ["--config", "good.json", "--store", "memory", "--port", "0"];
  const cases: [string, () => string[], () => RegExp[], number | "serves", Record<string, string>?][] = [
    ["Redis down (the password never shown)", () => ["--config", "good.json", "--redis", `redis://app:hunter2@127.0.0.1:${downPort}`, "--port", "0"], () => [new RegExp(`redis://app:\\*\\*\\*@127\\.0\\.0\\.1:${downPort}`), new RegExp(`ECONNREFUSED 127\\.0\\.0\\.1:${downPort}`), /is redis-server running/, /failMode/], "serves"],
    ["a Redis host that does not resolve", () => ["--config", "good.json", "--redis", "redis://no-such-host.invalid:6379", "--port", "0"], () => [/redis:\/\/no-such-host\.invalid:6379/, /(ENOTFOUND|EAI_AGAIN) no-such-host\.invalid/, /host name/], "serves"],
    ["rediss:// against a server without TLS", () => ["--config", "good.json", "--redis", `rediss://127.0.0.1:${redis.port}`, "--port", "0"], () => [new RegExp(`rediss://127\\.0\\.0\\.1:${redis.port}`), /use redis:\/\/ instead of rediss:\/\//], "serves"],
    ["a malformed Redis URL", () => ["--config", "good.json", "--redis", "http://127.0.0.1:6379"], () => [/--redis: must start with redis:\/\/ or rediss:\/\//, /http:\/\/127\.0\.0\.1:6379/], 2],
    ["a REDIS_URL with no host", () => ["--config", "good.json", "--port", "0"], () => [/REDIS_URL/, /names no host|is not a URL/], 2, { REDIS_URL: "redis://:6379" }],
    ["the port in use, with Redis", () => ["--config", "good.json", "--redis", redis.url, "--port", String(busyPort)], () => [new RegExp(`127\\.0\\.0\\.1:${busyPort}: EADDRINUSE`), /--port/], 1],
    ["the port in use, with memory", () => ["--config", "good.json", "--store", "memory", "--port", String(busyPort)], () => [/EADDRINUSE/, /--port/], 1],
    ["a missing config file", () => ["--config", "missing.json", "--store", "memory"], () => [/--config: cannot read missing\.json: ENOENT/], 2],
    ["a JSON syntax error", () => ["--config", "broken.json", "--store", "memory"], () => [/broken\.json: is not valid JSON/], 2],
    ["no SPILLWAY_TOKEN", () => memory, () => [/SPILLWAY_TOKEN is not set/, /503/], "serves", { SPILLWAY_TOKEN: "" }],
  ];

  // Concurrent: each case is its own process on its own port (the two "port in use" cases both
  // meet the one busy port), and the "serves" cases spend their time in serve's 3 s wait for a
  // Redis that does not answer, not on the CPU: one after another they took 14 s, together 5.
  it.concurrent.for(cases)("%s", { timeout: 30_000 }, async ([, args, patterns, exit, env], { expect }) => {
    const expected = patterns();
    const ended = await serve(args(), expected.at(-1)!, env);
    for (const pattern of expected) expect(ended.output).toMatch(pattern);
    expect(ended.output).not.toContain("hunter2");
    expect(ended.output).not.toMatch(/^\s+at /m); // a message, not a stack trace
    expect(ended.exit, ended.output).toBe(exit);
    if (ended.exit === "serves") expect(ended.stoppedCode, ended.output).toBe(0);
  });
});
