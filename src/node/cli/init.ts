import { existsSync, readFileSync } from "node:fs";
import { mkdir, readdir, writeFile } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";
import { ValidationError } from "../../core/validation.js";
import { scaffoldFiles } from "./scaffold.js";

/** This package's own manifest: the scaffold depends on the version that wrote it. */
function ownManifest(): { version: string; devDependencies?: Record<string, string> } {
  // src/node/cli/ and dist/node/cli/ both sit three levels below the package root.
  return JSON.parse(readFileSync(new URL("../../../package.json", import.meta.url), "utf8")) as { version: string };
}

const PROJECT_NAME = /^[a-z0-9][a-z0-9-]{0,62}$/;

/**
 * `spillway init DIR`: writes a Worker project into DIR, which must be new or empty (nothing
 * is overwritten). Returns the files written, relative to DIR.
 */
export async function initProject(dir: string): Promise<string[]> {
  const root = resolve(dir);
  if (existsSync(root) && (await readdir(root)).length > 0) throw new ValidationError("DIR", `${dir} is not empty; spillway init writes into a new or empty directory`);
  const name = basename(root).toLowerCase().replace(/[^a-z0-9-]+/g, "-").replace(/^-+|-+$/g, "");
  if (!PROJECT_NAME.test(name)) throw new ValidationError("DIR", `${JSON.stringify(basename(root))} gives no usable Worker name (letters, digits and -)`);
  const manifest = ownManifest();
  const wrangler = manifest.devDependencies?.wrangler ?? "4";
  const node = manifest.devDependencies?.node ?? "24";
  const files = scaffoldFiles(name, { spillway: manifest.version, wrangler: wrangler.startsWith("^") ? wrangler : `^${wrangler}`, node });
  for (const [path, content] of Object.entries(files)) {
    await mkdir(dirname(join(root, path)), { recursive: true });
    await writeFile(join(root, path), content);
  }
  return Object.keys(files);
}
