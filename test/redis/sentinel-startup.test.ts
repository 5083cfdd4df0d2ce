import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, type ExpectStatic, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { type SentinelGroup, startSentinelGroup } from "../../scripts/redis-sentinel.js";
import { parsePolicy } from "../../src/core/policy.js";
import { RedisStore } from "../../src/stores/redis/store.js";

// `spillway serve --redis-sentinel`: the startup mistakes (as in cli-startup-mistakes.test.ts),
// and a master behind sentinels that want passwords of their own, from the library and the CLI.

const bin = fileURLToPath(new URL("../../bin/spillway.mjs", import.meta.url));
let dir: string;
let group: SentinelGroup;
let downPort: number;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "spillway-sentinel-start-"));
  writeFileSync(join(dir, "good.json"), JSON.stringify({ policies: [{ name: "demo", limit: 3, period: "10s" }] }));
  group = await startSentinelGroup({ replicas: 0, sentinelCount: 1, password: "m-secret", sentinelPassword: "s-secret" });
  downPort = await freePort();
});

afterAll(async () => {
  await group?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Ended {
  exit: number | "serves";
  /** When it served: its exit code after the SIGTERM (0 for a clean stop). */
  stoppedCode?: number | null;
  output: string;
  /** What /healthz answered while it served. */
  health?: string;
  metrics?: string;
}

/** Runs `spillway serve ARGS` until it exits, or until it listens (then reads /healthz and /metrics, and sends SIGTERM). */
function serve(args: string[], env: Record<string, string | undefined> = {}): Promise<Ended> {
  const child: ChildProcess = spawn(process.execPath, [bin, "serve", "--config", "good.json", "--port", "0", ...args], { cwd: dir, env: { ...process.env, SPILLWAY_TOKEN: "t", REDIS_URL: undefined, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  let serving: Promise<{ health: string; metrics: string }> | undefined;
  return new Promise((resolve) => {
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (!serving && url) {
        serving = (async () => {
          const health = await (await fetch(`${url}/healthz`)).text();
          const metrics = await (await fetch(`${url}/metrics`, { headers: { authorization: "Bearer t" } })).text();
          child.kill("SIGTERM");
          return { health, metrics };
        })();
      }
    };
    child.stdout!.on("data", read);
    child.stderr!.on("data", read);
    child.once("exit", async (code) => {
      const seen = await serving;
      resolve(seen ? { exit: "serves", stoppedCode: code, output, ...seen } : { exit: code ?? -1, output });
    });
  });
}

const noSecrets = (expect: ExpectStatic, output: string) => {
  expect(output).not.toContain("m-secret");
  expect(output).not.toContain("s-secret");
  expect(output).not.toMatch(/^\s+at /m);
};

// Concurrent: each case is its own process, and the mistakes that exit 2 spend their time in
// serve's 3 s wait for a sentinel, not on the CPU (one after another: 10 s, together: 4 s).
describe.concurrent("spillway serve --redis-sentinel", () => {
  it("serves through the sentinels with both passwords: /healthz and spillway_store_up say redis-sentinel", async ({ expect }) => {
    const sentinels = group.addresses.map(({ host, port }) => `${host}:${port}`).join(",");
    const ended = await serve(["--redis-sentinel", sentinels, "--redis-sentinel-name", group.name], { REDIS_PASSWORD: "m-secret", REDIS_SENTINEL_PASSWORD: "s-secret" });
    expect(ended.exit, ended.output).toBe("serves");
    expect(ended.stoppedCode, ended.output).toBe(0);
    expect(JSON.parse(ended.health!)).toEqual({ ok: true, store: "redis-sentinel" });
    expect(ended.metrics).toContain('spillway_store_up{store="redis-sentinel"} 1');
    expect(ended.output).toContain("store: redis-sentinel");
    noSecrets(expect, ended.output);
  }, 30_000);

  it("an unknown master name: exit 2, one line naming --redis-sentinel-name and what each sentinel said", async ({ expect }) => {
    const sentinels = group.addresses.map(({ host, port }) => `${host}:${port}`).join(",");
    const ended = await serve(["--redis-sentinel", sentinels, "--redis-sentinel-name", "nosuchmaster", "--redis-sentinel-password", "s-secret"]);
    expect(ended.exit, ended.output).toBe(2);
    const lines = ended.output.trim().split("\n");
    expect(lines, ended.output).toHaveLength(1);
    expect(lines[0]).toMatch(/^spillway: --redis-sentinel-name: cannot find Redis master "nosuchmaster" via sentinel 127\.0\.0\.1:\d+/);
    expect(lines[0]).toContain(`127.0.0.1:${group.sentinels[0]!.port} knows no master named "nosuchmaster"`);
    expect(lines[0]).toContain("sentinel monitor NAME");
    noSecrets(expect, ended.output);
  }, 30_000);

  it("no sentinel answers: exit 2 with one line naming --redis-sentinel, which sentinel refused and why", async ({ expect }) => {
    const ended = await serve(["--redis-sentinel", `127.0.0.1:${downPort}`, "--redis-sentinel-name", "mymaster"]);
    expect(ended.exit, ended.output).toBe(2);
    expect(ended.output).toMatch(new RegExp(`--redis-sentinel: cannot reach any sentinel of Redis master "mymaster" via sentinel 127\\.0\\.0\\.1:${downPort}: 127\\.0\\.0\\.1:${downPort}: no connection \\(refused, or closed before it answered\\) \\(is redis-sentinel running there, on that port\\?\\)`));
    expect(ended.output).not.toMatch(/serving anyway/);
    expect(ended.output.trim().split("\n")).toHaveLength(1);
  }, 30_000);

  it.for([
    ["an empty sentinel list", ["--redis-sentinel", "", "--redis-sentinel-name", "m"], /--redis-sentinel: must list at least one sentinel/],
    ["an address without a port", ["--redis-sentinel", "127.0.0.1", "--redis-sentinel-name", "m"], /--redis-sentinel: "127\.0\.0\.1" has no port/],
  ] as const)("%s: exit 2 naming the flag", async ([, args, pattern], { expect }) => {
    const ended = await serve([...args]);
    expect(ended.exit, ended.output).toBe(2);
    expect(ended.output).toMatch(pattern);
  });
});

describe("RedisStore({ sentinels }) with passwords", () => {
  it("the sentinels' password is their own: a wrong one is named, the right pair connects and decides", async () => {
    const logged: string[] = [];
    const wrong = new RedisStore({ sentinels: group.addresses, name: group.name, password: "m-secret", sentinelPassword: "wrong", log: (line) => logged.push(line) });
    try {
      expect(await wrong.ready(1500)).toBe(false);
      expect(wrong.connectionError).toMatch(/cannot reach any sentinel of Redis master "mymaster" via sentinel .*(WRONGPASS|invalid password).*a sentinel refused the credentials/);
      expect(wrong.connectionErrorField).toBe("sentinels");
    } finally {
      await wrong.close();
    }
    const right = new RedisStore({ sentinels: group.addresses, name: group.name, password: "m-secret", sentinelPassword: "s-secret" });
    try {
      expect(await right.ready(3000)).toBe(true);
      expect(right.kind).toBe("redis-sentinel");
      expect(await right.health()).toEqual({ ok: true, store: "redis-sentinel" });
      const policy = parsePolicy({ name: "two", algorithm: "fixed-window", limit: 2, period: "1m" }, "policy");
      const allowed = [];
      for (let i = 0; i < 3; i++) allowed.push((await right.check("k", [policy])).allowed);
      expect(allowed).toEqual([true, true, false]);
    } finally {
      await right.close();
    }
  });
});
