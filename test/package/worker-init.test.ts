import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { bundleWorker, scaffoldWorker, wrangler } from "../../scripts/bench/worker-scaffold.js";

// `npx spillway init` as a user runs it: from the installed tarball, into a new project whose
// own `npm install` brings wrangler; then that project's bundle, its config check, and its
// Worker under `wrangler dev` serving the policies of its own spillway.config.json.

let work: string;
let project: string;
let configText: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "spillway-init-"));
  project = await scaffoldWorker(work, inject("tarball"));
  configText = readFileSync(join(project, "spillway.config.json"), "utf8");
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("a Worker project from spillway init", () => {
  it("bundles with wrangler to at most 60 KiB gzip", async () => {
    const { gzipBytes } = await bundleWorker(project);
    expect(gzipBytes).toBeLessThanOrEqual(60 * 1024);
  });

  it("a typo in its config fails wrangler deploy --dry-run, naming the field", async () => {
    const config = JSON.parse(configText);
    config.policies[0].limt = config.policies[0].limit;
    delete config.policies[0].limit;
    writeFileSync(join(project, "spillway.config.json"), JSON.stringify(config));
    try {
      const failure = await bundleWorker(project).then(() => "deployed", (error: Error) => error.message);
      expect(failure).toContain('policies.per-minute.limt: is not a known field (did you mean "limit"?)');
    } finally {
      writeFileSync(join(project, "spillway.config.json"), configText);
    }
  });

  it("serves its own policies under wrangler dev", async () => {
    const port = await freePort();
    const dev: ChildProcess = spawn(wrangler(project), ["dev", "--port", String(port), "--ip", "127.0.0.1"], { cwd: project, stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, NO_COLOR: "1" } });
    let output = "";
    dev.stdout?.on("data", (chunk) => (output += chunk));
    dev.stderr?.on("data", (chunk) => (output += chunk));
    try {
      const check = () =>
        fetch(`http://127.0.0.1:${port}/v1/check`, { method: "POST", headers: { authorization: "Bearer dev-token" }, body: JSON.stringify({ key: "alice", policy: "per-minute" }) });
      let response: Response | undefined;
      for (let tries = 0; tries < 120 && !response; tries++) {
        response = await check().catch(() => undefined);
        if (!response) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(response, output).toBeDefined();
      expect(response!.status, output).toBe(200);
      // The scaffold's per-minute policy: gcra, 60 per minute.
      expect(response!.headers.get("ratelimit-policy")).toBe('"per-minute";q=60;w=60');
      expect(await response!.json()).toMatchObject({ allowed: true, limit: 60, remaining: 59, policy: "per-minute" });
    } finally {
      dev.kill("SIGTERM");
    }
  }, 120_000);
});
