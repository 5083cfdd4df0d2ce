import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parse as parseYaml } from "yaml";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { locked, lockInto, unlocked } from "../../scripts/locked-versions.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { allSnippets, comparable, documentPaths, firstInstallBlock, installedPackages, isWorkerModule, projectSteps, promisedOutput, type Snippet, snippetName, tooNewSyntax } from "./snippets.js";

// Every fenced block of README.md and docs/*.md, tested as written (test/package/snippets.ts says
// how each is classified). The consumer is the project `npm init -y` makes (npm 11: "type":
// "commonjs"), set up as the documents say (their `npm pkg set` lines), with only what they tell
// a user to install (the packed tarball for spillway); run blocks run on Node 22.12, the oldest
// Node the package claims, installed from the registry's `node` package.

const OLDEST_NODE = "22.12.0";
const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const snippets = allSnippets(root);
const packages = installedPackages(snippets);
const steps = projectSteps(snippets);
const of = (kind: Snippet["kind"]) => snippets.filter((snippet) => snippet.kind === kind);
const configKeys = new Set(Object.keys((JSON.parse(readFileSync(join(root, "spillway.schema.json"), "utf8")) as { properties: object }).properties));

let work: string;
let consumer: string;
let oldestNode: string;
let installOutput: string;
let redis: RedisServer | undefined;

/** Runs a command; a failure's message carries its output. */
async function sh(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<{ stdout: string; stderr: string }> {
  try {
    return await run(file, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...env } });
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(" ")} failed in ${cwd}:\n${failed.stdout ?? ""}${failed.stderr ?? failed.message}`);
  }
}

/** `name` as npm installs it here: spillway is the tarball, others at the version package-lock.json holds. */
const installSpec = (name: string, tarball: string) => (name === "spillway" ? tarball : locked(name));

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "spillway-snippets-"));
  consumer = join(work, "consumer");
  mkdirSync(join(consumer, "snippets"), { recursive: true });
  // As a reader's project starts: `npm init -y`, then the set-up the documents give.
  await sh("npm", ["init", "-y"], consumer);
  for (const step of steps) await sh("npm", step, consumer);
  lockInto(consumer);
  const tarball = inject("tarball");
  const installed = await sh("npm", ["install", ...packages.map((name) => installSpec(name, tarball)), "--no-audit", "--no-fund", "--prefer-offline"], consumer);
  installOutput = installed.stdout + installed.stderr;
  // The oldest Node the package claims, for the run blocks (the `node` package's own binary).
  const nodeDir = join(work, "node22");
  mkdirSync(nodeDir);
  writeFileSync(join(nodeDir, "package.json"), JSON.stringify({ name: "node22", private: true }));
  lockInto(nodeDir);
  await sh("npm", ["install", `node@${OLDEST_NODE}`, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], nodeDir);
  oldestNode = join(nodeDir, "node_modules", "node", "bin", "node");
  redis = await startRedis();
}, 300_000);

afterAll(async () => {
  await redis?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the documents' code blocks", () => {
  it("are all classified; skipped ones are listed with their reason", () => {
    expect(snippets.length).toBeGreaterThan(0);
    const untested = snippets.filter((snippet) => snippet.kind === "skip" || snippet.kind === "text");
    for (const snippet of untested) expect(snippet.reason, snippet.where).toBeTruthy();
    const counts = Object.fromEntries(["ts", "js", "json", "sh", "yaml", "text", "skip"].map((kind) => [kind, of(kind as Snippet["kind"]).length]));
    console.info(
      `snippets: ${snippets.length} blocks ${JSON.stringify(counts)}, ${snippets.filter((snippet) => snippet.run).length} run; installed: ${packages.join(" ")}\n` +
        untested.map((snippet) => `  not tested: ${snippet.where} (${snippet.lang || "no language"}): ${snippet.reason}`).join("\n"),
    );
  });

  it("are run with only versions package-lock.json holds (and the oldest Node claimed)", () => {
    expect(unlocked(consumer)).toEqual([]);
    expect(unlocked(join(work, "node22"), ["node"])).toEqual([]);
  });

  it("tell a user to install spillway, and npm prints no install-scripts warning for it", () => {
    expect(packages).toContain("spillway");
    const warnings = installOutput.split("\n").filter((line) => /install-scripts|install script/i.test(line));
    expect(warnings.filter((line) => /\bspillway@/.test(line))).toEqual([]);
  });

  it("say to set \"type\": \"module\" where a reader sets a project up: README's install line, the top of library.md and client.md", () => {
    // The blocks are ES modules (import, top-level await): `npm init -y` writes "type": "commonjs".
    expect(steps.map((step) => step.join(" "))).toEqual(["pkg set type=module"]);
    for (const file of ["README.md", "docs/library.md", "docs/client.md"]) {
      const block = firstInstallBlock(snippets, file);
      expect(block?.code, `${file}: its first npm install block`).toMatch(/^\s*npm pkg set type=module\b/m);
    }
    expect(JSON.parse(readFileSync(join(consumer, "package.json"), "utf8"))).toMatchObject({ name: "consumer", type: "module" });
  });

  it("use no syntax the oldest claimed Node (22.12) lacks", () => {
    const tooNew = [...of("ts"), ...of("js")].flatMap((snippet) => {
      const problem = tooNewSyntax(snippet.code);
      return problem ? [`${snippet.where}: ${problem}`] : [];
    });
    expect(tooNew).toEqual([]);
  });

  it("TypeScript blocks type-check as a strict consumer, with only the installed packages", async () => {
    const groups = { consumer: [] as string[], worker: [] as string[] };
    for (const snippet of of("ts")) {
      const file = `snippets/${snippetName(snippet)}.ts`;
      writeFileSync(join(consumer, file), snippet.code);
      groups[isWorkerModule(snippet.code) ? "worker" : "consumer"].push(file);
    }
    const base = { strict: true, noEmit: true, skipLibCheck: false, module: "nodenext", moduleResolution: "nodenext", target: "es2023", resolveJsonModule: true, isolatedModules: true };
    const failures: string[] = [];
    for (const [group, files] of Object.entries(groups)) {
      if (files.length === 0) continue;
      const types = group === "worker" ? ["@cloudflare/workers-types"] : ["node"];
      const lib = group === "worker" ? ["es2023"] : ["es2023", "dom"];
      writeFileSync(join(consumer, `tsconfig.${group}.json`), JSON.stringify({ compilerOptions: { ...base, lib, types }, files }));
      const tsc = join(consumer, "node_modules", "typescript", "bin", "tsc");
      await sh(process.execPath, [tsc, "-p", `tsconfig.${group}.json`], consumer).catch((error: Error) => failures.push(error.message));
    }
    // tsc names snippets/README-42.ts: that is README.md's block opening at line 42.
    expect(failures.join("\n")).toBe("");
  }, 180_000);

  const runnable = snippets.filter((snippet) => snippet.run);
  it.each(runnable.map((snippet) => [snippet.where, snippet] as const))("%s runs on Node 22.12 and prints what its comments promise", async (_where, snippet) => {
    const file = `snippets/run-${snippetName(snippet)}.${snippet.kind === "ts" ? "ts" : "mjs"}`;
    // The one liberty taken: Redis's address is this test's own redis-server.
    writeFileSync(join(consumer, file), snippet.code.replaceAll("redis://127.0.0.1:6379", redis!.url));
    const args = snippet.kind === "ts" ? [join(consumer, "node_modules", "tsx", "dist", "cli.mjs"), file] : [file];
    const { stdout } = await sh(oldestNode, args, consumer);
    const promised = promisedOutput(snippet.code);
    const printed = stdout.trim().split("\n").slice(0, promised.length);
    expect(printed.map(comparable)).toEqual(promised.map(comparable));
  }, 60_000);

  it.each(of("js").map((snippet) => [snippet.where, snippet] as const))("%s (js) parses", async (_where, snippet) => {
    const file = `snippets/${snippetName(snippet)}.mjs`;
    writeFileSync(join(consumer, file), snippet.code);
    await sh(process.execPath, ["--check", file], consumer);
  });

  it.each(of("json").map((snippet) => [snippet.where, snippet] as const))("%s (json) parses; a config passes spillway check", async (_where, snippet) => {
    const values = parseJsonOrLines(snippet);
    // A config: every top-level field is one of the config schema's (a decision body has `allowed`, …).
    const isConfig = values.length === 1 && isObject(values[0]) && Object.keys(values[0]).every((key) => configKeys.has(key));
    if (!isConfig) return;
    const file = `snippets/${snippetName(snippet)}.json`;
    writeFileSync(join(consumer, file), snippet.code);
    const { stdout } = await sh(process.execPath, [join(consumer, "node_modules", "spillway", "bin", "spillway.mjs"), "check", "--config", file], consumer);
    expect(stdout).toContain("is valid");
  });

  it.each(of("sh").map((snippet) => [snippet.where, snippet] as const))("%s (shell) is valid bash", async (_where, snippet) => {
    const file = join(consumer, "snippets", `${snippetName(snippet)}.sh`);
    writeFileSync(file, snippet.code);
    await sh("bash", ["-n", file], consumer);
  });

  it.each(of("yaml").map((snippet) => [snippet.where, snippet] as const))("%s (yaml) parses", (_where, snippet) => {
    expect(() => parseYaml(snippet.code)).not.toThrow();
  });
});

function parseJsonOrLines(snippet: Snippet): unknown[] {
  try {
    return [JSON.parse(snippet.code)];
  } catch (whole) {
    const lines = snippet.code.split("\n").filter((line) => line.trim() !== "");
    try {
      return lines.map((line) => JSON.parse(line) as unknown);
    } catch {
      throw new Error(`${snippet.where}: not JSON (nor JSON Lines): ${(whole as Error).message}`);
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
