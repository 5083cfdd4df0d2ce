import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { bundleWorker, wrangler } from "../../scripts/bench/worker-scaffold.js";
import { lockInto, unlocked } from "../../scripts/locked-versions.js";

// `npx spillway init` as a user on a fresh machine runs it: on the machine's own Node (the global
// `node`, 20 here, older than wrangler and spillway need), from the installed tarball, into a new
// project whose `npm install` brings wrangler and the Node it pins; then `npm start` there on that
// same global Node, the README's curl loop against it, its bundle and its config check.

const run = promisify(execFile);
const NPM_QUIET = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];
/** The machine's PATH without any node_modules/.bin or this test's own Node: `node` is the global one. */
const globalPath = (process.env.PATH ?? "")
  .split(delimiter)
  .filter((dir) => !dir.includes("node_modules"))
  .join(delimiter);
const globalEnv: NodeJS.ProcessEnv = { ...process.env, PATH: globalPath, NO_COLOR: "1", FORCE_COLOR: "0" };
for (const name of Object.keys(globalEnv)) if (name.startsWith("npm_")) delete globalEnv[name];

let work: string;
let project: string;
let configText: string;
let globalNode: string;

/** Runs a command on the machine's global Node; a failure's message carries its output. */
async function onGlobalNode(file: string, args: string[], cwd: string): Promise<string> {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, env: globalEnv, maxBuffer: 64 * 1024 * 1024 });
    return stdout + stderr;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(" ")} failed in ${cwd}:\n${failed.stdout ?? ""}${failed.stderr ?? failed.message}`);
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "spillway-init-"));
  globalNode = (await onGlobalNode("node", ["--version"], work)).trim();
  const tarball = inject("tarball");
  const tools = join(work, "tools");
  mkdirSync(tools);
  writeFileSync(join(tools, "package.json"), JSON.stringify({ name: "tools", private: true }));
  lockInto(tools);
  await onGlobalNode("npm", ["install", tarball, ...NPM_QUIET], tools);
  await onGlobalNode(join(tools, "node_modules", ".bin", "spillway"), ["init", "my-limiter"], work);
  project = join(work, "my-limiter");
  configText = readFileSync(join(project, "spillway.config.json"), "utf8");
  // The tarball in place of the registry's spillway; everything else as generated, installed at
  // the versions our package-lock.json holds (the scaffold's ranges admit them).
  const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  manifest.dependencies.spillway = `file:${tarball}`;
  writeFileSync(join(project, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  lockInto(project);
  await onGlobalNode("npm", ["install", ...NPM_QUIET], project);
}, 300_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("a Worker project from spillway init, on the machine's global Node", () => {
  it("installs only versions package-lock.json holds", () => {
    expect(unlocked(join(work, "tools"))).toEqual([]);
    expect(unlocked(project)).toEqual([]);
  });

  it("the global Node is older than wrangler needs, and spillway says which it needs in one line", async () => {
    expect(globalNode).toMatch(/^v\d+\./);
    if (Number(globalNode.slice(1).split(".")[0]) >= 22) return; // a machine with a new Node: nothing to show
    const failure = await onGlobalNode(join(project, "node_modules", ".bin", "spillway"), ["check", "--config", "spillway.config.json"], project).catch((error: Error) => error.message);
    expect(failure.trim().split("\n").at(-1)).toMatch(/^spillway: needs Node 22\.12 or later; this is Node 20\./);
    // and how to get one: a version manager, or a Node from npm for this once.
    expect(failure.trim().split("\n").at(-1)).toMatch(/nvm install 24.*npx -p node@24 -p spillway spillway check --config spillway\.config\.json$/);
  });

  // A budget, not the platform's limit (3 MiB gzip on the free plan): the generated Worker imports
  // spillway/worker/api, which bundles no gateway (docs/worker.md, "Size").
  it("pins Node, sets minify without kept names, and bundles as generated to at most 60 KiB gzip", async () => {
    const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { devDependencies: Record<string, string>; engines: Record<string, string> };
    expect(manifest.devDependencies.node).toMatch(/^\d+\.\d+\.\d+$/);
    expect(manifest.engines.node).toBe(">=22.12");
    const toml = readFileSync(join(project, "wrangler.toml"), "utf8");
    expect(toml).toMatch(/^minify = true$/m);
    expect(toml).toMatch(/^keep_names = false$/m);
    const { bytes, gzipBytes } = await bundleWorker(project);
    console.info(`spillway init's Worker, as generated: ${(bytes / 1024).toFixed(1)} KiB, ${(gzipBytes / 1024).toFixed(1)} KiB gzip`);
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

  it("`npm start` on the global Node serves its own policies: the README's curl loop gets three 200s, then a 429", async () => {
    const port = await freePort();
    const dev: ChildProcess = spawn("npm", ["start", "--", "--port", String(port), "--ip", "127.0.0.1"], { cwd: project, stdio: ["ignore", "pipe", "pipe"], env: globalEnv, detached: true });
    let output = "";
    dev.stdout?.on("data", (chunk) => (output += chunk));
    dev.stderr?.on("data", (chunk) => (output += chunk));
    try {
      const url = `http://127.0.0.1:${port}/v1/check`;
      let first: Response | undefined;
      for (let tries = 0; tries < 240 && !first; tries++) {
        first = await fetch(url, { method: "POST", headers: { authorization: "Bearer dev-token" }, body: JSON.stringify({ key: "probe", policy: "per-minute" }) }).catch(() => undefined);
        if (!first) await new Promise((resolve) => setTimeout(resolve, 500));
      }
      expect(first, output).toBeDefined();
      expect(first!.status, output).toBe(200);
      // The scaffold's per-minute policy: gcra, 60 per minute.
      expect(first!.headers.get("ratelimit-policy")).toBe('"per-minute";q=60;w=60');
      expect(await first!.json()).toMatchObject({ allowed: true, limit: 60, remaining: 59, policy: "per-minute" });

      const readme = readFileSync(join(project, "README.md"), "utf8");
      const loop = [...readme.matchAll(/```sh\n([\s\S]*?)```/g)].map((match) => match[1]!).find((block) => block.includes("curl"))!;
      const { stdout } = await run("bash", ["-c", loop.replaceAll("localhost:8787", `127.0.0.1:${port}`)], { cwd: project });
      // Each line: the decision's JSON, then the status.
      const statuses = stdout.trim().split("\n").map((line) => line.trim().split(" ").at(-1));
      expect(statuses, stdout).toEqual(["200", "200", "200", "429"]);
    } finally {
      process.kill(-dev.pid!, "SIGTERM");
    }
  }, 180_000);
});
