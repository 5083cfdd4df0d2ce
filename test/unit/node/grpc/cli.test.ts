import { type ChildProcess, spawn } from "node:child_process";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { README_CONFIGS, configDir, d, rlsClient } from "./rls-helpers.js";

const BIN = new URL("../../../../bin/spillway.mjs", import.meta.url).pathname;
// Each test starts a Node process that loads the whole CLI: slow on a loaded machine.
const PROCESS_TEST_TIMEOUT_MS = 60_000;
const children: ChildProcess[] = [];

function run(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, SPILLWAY_TOKEN: "rls-token" }, stdio: ["ignore", "pipe", "pipe"] });
  children.push(child);
  let output = "";
  child.stdout?.on("data", (chunk) => (output += chunk));
  child.stderr?.on("data", (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const waitFor = async (pattern: RegExp, timeoutMs = 30_000): Promise<RegExpMatchArray> => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const match = output.match(pattern);
      if (match) return match;
      if (Date.now() > deadline || child.exitCode !== null) throw new Error(`no ${pattern} in output:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  return { child, exit, output: () => output, waitFor };
}

afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
});

const BAD = "domain: broken\ndescriptors:\n  - key: k\n    rate_limit: { unit: fortnight, requests_per_unit: 1 }\n";

describe("spillway check/serve --rls-config", { timeout: PROCESS_TEST_TIMEOUT_MS }, () => {
  it("check accepts the README examples and exits 2 naming the file and field of a bad one", async () => {
    // Both processes started before either is awaited: each is half a second of CPU loading the CLI.
    const dir = await configDir({ ...README_CONFIGS, "broken.yaml": BAD });
    const good = run(["check", "--rls-config", await configDir(README_CONFIGS)]);
    const bad = run(["check", "--rls-config", dir]);
    expect(await good.exit).toBe(0);
    expect(good.output()).toContain("is valid (8 domains");
    expect(await bad.exit).toBe(2);
    expect(bad.output()).toContain(`${join(dir, "broken.yaml")}: descriptors.0.rate_limit.unit: must be one of second`);
  });

  it("serve exits 2 before starting for a bad file, and for --rls-port without --rls-config", async () => {
    const dir = await configDir({ "broken.yaml": BAD });
    const bad = run(["serve", "--store", "memory", "--port", "0", "--rls-port", "0", "--rls-config", dir]);
    const half = run(["serve", "--store", "memory", "--port", "0", "--rls-port", "0"]);
    expect(await bad.exit).toBe(2);
    expect(bad.output()).toContain("broken.yaml: descriptors.0.rate_limit.unit");
    expect(await half.exit).toBe(2);
    expect(half.output()).toContain("--rls-config: is required with --rls-port");
  });

  it("serves gRPC beside HTTP, reloads on SIGHUP (a bad file keeps the old config), exports metrics, stops on SIGTERM", async () => {
    const dir = await configDir({ "limits.yaml": "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 3 }\n" });
    const serve = run(["serve", "--store", "memory", "--port", "0", "--metrics-port", "0", "--rls-port", "0", "--rls-config", dir]);
    const [, address] = await serve.waitFor(/rate limit service \(gRPC\) on (\S+),/);
    const [, metricsUrl] = await serve.waitFor(/metrics on (\S+)\/metrics/);
    const client = rlsClient(address!);
    try {
      expect((await client.ask("app", [d(["user", "u1"])])).statuses[0]).toMatchObject({ limit_remaining: 2, current_limit: { requests_per_unit: 3 } });
      await writeFile(join(dir, "limits.yaml"), "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: -4 }\n");
      serve.child.kill("SIGHUP");
      const [refused] = await serve.waitFor(/reload refused.*\n/);
      expect(refused).toContain("limits.yaml: descriptors.0.rate_limit.requests_per_unit");
      expect(refused.trim().split("\n")).toHaveLength(1);
      expect((await client.ask("app", [d(["user", "u1"])])).statuses[0]!.limit_remaining).toBe(1);
      await writeFile(join(dir, "limits.yaml"), "domain: app\ndescriptors:\n  - key: user\n    rate_limit: { unit: hour, requests_per_unit: 10 }\n");
      serve.child.kill("SIGHUP");
      await serve.waitFor(/reloaded/);
      // Same counter (same entries), new limit: 2 used of 10.
      expect((await client.ask("app", [d(["user", "u1"])])).statuses[0]).toMatchObject({ limit_remaining: 7, current_limit: { requests_per_unit: 10 } });
      const metrics = await (await fetch(`${metricsUrl}/metrics`)).text();
      expect(metrics).toContain('ratelimit_service_rate_limit_total_hits{domain="app",key="user"} 3');
      expect(metrics).toContain('ratelimit_service_rate_limit_over_limit{domain="app",key="user"} 0');
    } finally {
      client.close();
    }
    serve.child.kill("SIGTERM");
    expect(await serve.exit).toBe(0);
  });
});
