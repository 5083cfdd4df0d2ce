import { readFile, readdir, realpath, stat } from "node:fs/promises";
import { join, relative } from "node:path";
import { ValidationError } from "../../core/validation.js";
import { type RlsFile, parseRlsConfig } from "../../rls/config.js";
import { parseRlsText } from "../../rls/files.js";
import type { RlsConfig } from "../../rls/types.js";
import type { RlsEnvSettings } from "./env.js";

type Runtime = RlsEnvSettings["runtime"];

/** RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY: where the reference's file provider finds its config. */
export function runtimeConfigDir(runtime: Runtime): string {
  return join(runtime.root, runtime.subdirectory, runtime.appDirectory);
}

/**
 * Reads the config directory as the reference's runtime loader (lyft/goruntime) does: every
 * file under it, in subdirectories too, whatever its name ends in, read as YAML (`.json`
 * as JSON); files and directories whose name starts with a dot are read too unless
 * RUNTIME_IGNOREDOTFILES. Files are named by their path under the directory in errors. A
 * directory that does not exist is an error naming RUNTIME_ROOT (the reference would serve
 * with no limits); an empty one is a config with no domain.
 */
export async function loadRuntimeConfig(runtime: Runtime): Promise<RlsConfig> {
  const dir = runtimeConfigDir(runtime);
  const paths = await listFiles(dir, runtime.ignoreDotFiles);
  const files: RlsFile[] = await Promise.all(
    paths.map(async (path) => {
      const name = relative(dir, path);
      try {
        return parseRlsText(name, await readFile(path, "utf8"));
      } catch (error) {
        if (error instanceof ValidationError) throw error;
        throw new ValidationError(name, `cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`);
      }
    }),
  );
  return parseRlsConfig(files);
}

async function listFiles(dir: string, ignoreDotFiles: boolean): Promise<string[]> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
    throw new ValidationError("RUNTIME_ROOT", `cannot read the config directory ${dir} (RUNTIME_ROOT/RUNTIME_SUBDIRECTORY/RUNTIME_APPDIRECTORY): ${code}`);
  }
  const found: string[] = [];
  for (const entry of entries.sort((a, b) => (a.name < b.name ? -1 : 1))) {
    if (ignoreDotFiles && entry.name.startsWith(".")) continue;
    const path = join(dir, entry.name);
    // A symlink is followed, as filepath.Walk's lstat does not: goruntime reads it as a file.
    const isDir = entry.isDirectory() || (entry.isSymbolicLink() && (await stat(path).catch(() => undefined))?.isDirectory());
    if (isDir) found.push(...(await listFiles(path, ignoreDotFiles)));
    else found.push(path);
  }
  return found;
}

/**
 * What a reload watches, polled (fs events are unreliable on symlinks, bind mounts and
 * Kubernetes ConfigMaps): with RUNTIME_WATCH_ROOT (the default) only where RUNTIME_ROOT points,
 * so a deployment swaps a symlink to publish a new config at once; without it, every file of
 * the config directory (name, size, modification time).
 */
export async function runtimeSignature(runtime: Runtime): Promise<string> {
  if (runtime.watchRoot) return realpath(runtime.root).catch(() => "");
  const dir = runtimeConfigDir(runtime);
  const paths = await listFiles(dir, runtime.ignoreDotFiles).catch(() => []);
  const parts = await Promise.all(
    paths.map(async (path) => {
      const info = await stat(path).catch(() => undefined);
      return `${path}:${info?.size ?? "-"}:${info?.mtimeMs ?? "-"}`;
    }),
  );
  return parts.join("\n");
}

/** Polls runtimeSignature every `intervalMs` and calls `onChange` when it differs from the one read first. Returns the stop. */
export async function watchRuntime(runtime: Runtime, intervalMs: number, onChange: () => Promise<unknown>): Promise<() => void> {
  let last = await runtimeSignature(runtime);
  let busy = false;
  const timer = setInterval(() => {
    if (busy) return;
    busy = true;
    runtimeSignature(runtime)
      .then(async (signature) => {
        if (signature === last) return;
        last = signature;
        await onChange();
      })
      .catch(() => {})
      .finally(() => (busy = false));
  }, intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
