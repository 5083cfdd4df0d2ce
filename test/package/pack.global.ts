// Packs the package once for every package test file: `npm pack` (which builds dist/ through
// `prepack`) into a directory of its own; the files read its path with inject("tarball").
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import type { TestProject } from "vitest/node";

declare module "vitest" {
  export interface ProvidedContext {
    /** The packed tarball's path. */
    tarball: string;
    /** The files `npm pack` put in it. */
    packedFiles: string[];
  }
}

const root = fileURLToPath(new URL("../../", import.meta.url));

export default async function setup(project: TestProject): Promise<() => void> {
  const work = mkdtempSync(join(tmpdir(), "spillway-pack-"));
  const { stdout } = await promisify(execFile)("npm", ["pack", "--json", "--pack-destination", work], { cwd: root, maxBuffer: 64 * 1024 * 1024 });
  const packed = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
  project.provide("tarball", join(work, packed[0]!.filename));
  project.provide("packedFiles", packed[0]!.files.map((file) => file.path));
  return () => rmSync(work, { recursive: true, force: true });
}
