/**
 * A Worker project as a user makes it: this package packed (`npm pack`, which builds dist/),
 * installed into a tools project, `spillway init` run from that installed copy, and the
 * scaffold's own dependencies installed with the tarball in place of the registry's spillway.
 * Used by bench:size (the Worker's bundle size) and the package test of `spillway init`.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { gzipSync } from "node:zlib";
import { lockInto } from "../locked-versions.js";

const run = promisify(execFile);
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

/** Runs a command and answers its stdout (and stderr after it, with `withStderr`); a failure's output is in its message. */
export async function sh(file: string, args: string[], cwd: string, withStderr = false): Promise<string> {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, maxBuffer: 64 * 1024 * 1024, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0" } });
    return withStderr ? stdout + stderr : stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(" ")} failed in ${cwd}:\n${failed.stdout ?? ""}${failed.stderr ?? failed.message}`);
  }
}

const NPM_QUIET = ["--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"];

/** Packs the package into `work`; answers the tarball's path. */
export async function packInto(work: string): Promise<string> {
  const packed = JSON.parse(await sh("npm", ["pack", "--json", "--pack-destination", work], ROOT)) as { filename: string }[];
  return join(work, packed[0]!.filename);
}

/**
 * `spillway init NAME` in `work` from the installed tarball, then `npm install` there (the
 * tarball for spillway, the registry's wrangler; both installs at the versions our
 * package-lock.json holds). Answers the project's directory.
 */
export async function scaffoldWorker(work: string, tarball: string, name = "my-limiter"): Promise<string> {
  const tools = join(work, "tools");
  mkdirSync(tools, { recursive: true });
  writeFileSync(join(tools, "package.json"), JSON.stringify({ name: "tools", private: true }));
  lockInto(tools);
  await sh("npm", ["install", tarball, ...NPM_QUIET], tools);
  await sh(join(tools, "node_modules", ".bin", "spillway"), ["init", name], work);
  const project = join(work, name);
  const manifest = JSON.parse(readFileSync(join(project, "package.json"), "utf8")) as { dependencies: Record<string, string> };
  manifest.dependencies.spillway = `file:${tarball}`;
  writeFileSync(join(project, "package.json"), `${JSON.stringify(manifest, null, 2)}\n`);
  lockInto(project);
  await sh("npm", ["install", ...NPM_QUIET], project);
  return project;
}

export const wrangler = (project: string) => join(project, "node_modules", ".bin", "wrangler");

/** `wrangler deploy --dry-run` (the scaffold's wrangler.toml sets minify): answers wrangler's output and the bundle's bytes, raw and gzipped. */
export async function bundleWorker(project: string): Promise<{ output: string; bytes: number; gzipBytes: number }> {
  const outdir = join(project, ".bundle");
  const output = await sh(wrangler(project), ["deploy", "--dry-run", "--outdir", outdir], project, true);
  const code = readFileSync(join(outdir, "index.js"));
  return { output, bytes: code.length, gzipBytes: gzipSync(code, { level: 9 }).length };
}
