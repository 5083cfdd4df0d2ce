import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseConfig } from "../../../../src/config/config.js";
import { parseCheckArgs, parseServeArgs } from "../../../../src/node/args/serve.js";
import { MemoryStore, startServer } from "../../../../src/node-middleware.js";
import { runSpillway } from "./cli-process.js";
import { thrownMessage } from "../../core/thrown-message.js";

// The error texts a newcomer met in the first hour (issue 45, "Found by a newcomer", 6), each
// with the exact words it says now: the field in Spillway's words, what it takes, and where to
// look next.

const message = thrownMessage;

describe("flags", () => {
  it("an unknown one suggests the near flag and points to the command's --help", () => {
    expect(message(() => parseServeArgs(["--prot", "8787"], {}))).toBe("--prot: is not a flag of spillway serve (did you mean --port?); spillway serve --help lists them");
    expect(message(() => parseServeArgs(["--no-metric"], {}))).toBe("--no-metric: is not a flag of spillway serve (did you mean --no-metrics?); spillway serve --help lists them");
    expect(message(() => parseServeArgs(["--frobnicate"], {}))).toBe("--frobnicate: is not a flag of spillway serve; spillway serve --help lists them");
    expect(message(() => parseServeArgs(["--port"], {}))).toBe("--port: needs a value; spillway serve --help says what it takes");
    expect(message(() => parseServeArgs(["spillway.config.json"], {}))).toBe('arguments: spillway serve takes flags only, got "spillway.config.json"; spillway serve --help lists them');
    expect(message(() => parseCheckArgs(["--confg", "x.json"]))).toBe("--confg: is not a flag of spillway check (did you mean --config?); spillway check --help lists them");
  });

  it("init and rls point to their --help too", { timeout: 30_000 }, async () => {
    const [init, rls] = await Promise.all([runSpillway(["init", "--force", "x"]), runSpillway(["rls", "--port", "1"])]);
    expect(init.status).toBe(2);
    expect(init.stderr.trim()).toBe("spillway: --force: spillway init takes one directory and no flags: spillway init my-limiter; spillway init --help says more");
    expect(rls.status).toBe(2);
    expect(rls.stderr.trim()).toBe(
      `spillway: rls takes no arguments: it is configured by envoyproxy/ratelimit's environment variables (REDIS_URL, RUNTIME_ROOT, GRPC_PORT …), got "--port"; spillway rls --help says more`,
    );
  });

  it("--redis-sentinel given a URL says HOST:PORT, not a URL, and never repeats the URL's password", () => {
    const args = (list: string) => ["--config", "c.json", "--redis-sentinel", list, "--redis-sentinel-name", "mymaster"];
    expect(message(() => parseServeArgs(args("redis://127.0.0.1:26379"), {}))).toBe(
      '--redis-sentinel: lists sentinels as HOST:PORT, not a URL: write 127.0.0.1:26379 for "redis://127.0.0.1:26379" (a password goes in --redis-password and --redis-sentinel-password, TLS is --redis-sentinel-tls)',
    );
    const secret = message(() => parseServeArgs(args("redis://user:hunter2@10.0.0.2"), {}));
    expect(secret).toBe(
      '--redis-sentinel: lists sentinels as HOST:PORT, not a URL: write 10.0.0.2:26379 for "redis://…@10.0.0.2" (a password goes in --redis-password and --redis-sentinel-password, TLS is --redis-sentinel-tls)',
    );
    expect(secret).not.toContain("hunter2");
  });
});

describe("Spillway's own paths, where there is nothing to serve", () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  });

  it("spillway serve --no-metrics: /dashboard says the flag is why; GET / points to POST /v1/check", { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "spillway-texts-"));
    const config = join(dir, "spillway.config.json");
    writeFileSync(config, JSON.stringify({ policies: [{ name: "per-minute", limit: 10, period: "1m" }] }));
    const child = spawn(process.execPath, [new URL("../../../../bin/spillway.mjs", import.meta.url).pathname, "serve", "--config", config, "--store", "memory", "--port", "0", "--no-metrics"], {
      env: { ...process.env, SPILLWAY_TOKEN: "t" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      let output = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        output += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      });
      child.once("exit", () => reject(new Error(`serve exited: ${output}`)));
    });
    const dashboard = await fetch(`${url}/dashboard`);
    expect(dashboard.status).toBe(404);
    expect(((await dashboard.json()) as { detail: string }).detail).toBe(
      "/dashboard is not served here: spillway serve runs with --no-metrics (start it without that flag for /metrics, /v1/top, /v1/stats and /dashboard)",
    );
    const root = await fetch(`${url}/`);
    expect(root.status).toBe(404);
    expect(((await root.json()) as { detail: string }).detail).toBe(ROOT_DETAIL);
  });

  it("startServer without observability: the 404 says it was started without it", async () => {
    const server = await startServer({ config: parseConfig({ policies: [] }), limiter: new MemoryStore(), port: 0, token: "t" });
    try {
      const metrics = await fetch(`${server.url}/metrics`);
      expect(((await metrics.json()) as { detail: string }).detail).toBe("/metrics is not served here: this server was started without it");
    } finally {
      await server.close();
    }
  });
});

export const ROOT_DETAIL =
  'no route for GET /: this is Spillway\'s API, not a page: ask with POST /v1/check {"key":"alice","policy":"NAME"} and Authorization: Bearer $SPILLWAY_TOKEN; GET /healthz needs no token (docs/http-api.md)';

