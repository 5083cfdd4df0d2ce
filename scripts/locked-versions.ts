/**
 * The versions package-lock.json holds, for every project a test or benchmark installs of its
 * own (the packed tarball's consumers, `spillway init`'s project): one source of truth, so that
 * such an install resolves what this repository's `npm ci` resolves, whatever the registry has
 * published since and whatever npm's cache happens to hold. A project gets our lockfile before
 * its install (`lockInto`), names what it adds at the exact version the lockfile holds
 * (`locked`), and `unlocked` lists what an install brought that the lockfile does not hold.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

interface Lockfile {
  name: string;
  version?: string;
  packages: Record<string, { version?: string; link?: boolean }>;
}

const root = fileURLToPath(new URL("../", import.meta.url));
const readJson = <T>(dir: string, file: string) => JSON.parse(readFileSync(join(dir, file), "utf8")) as T;
const rootLock = readJson<Lockfile>(root, "package-lock.json");

/** `node_modules/a/node_modules/@s/b` → `@s/b`. */
const nameOf = (path: string) => path.slice(path.lastIndexOf("node_modules/") + "node_modules/".length);

/** The exact version package-lock.json holds for `name` at the top of node_modules. */
export function lockedVersion(name: string): string {
  const version = rootLock.packages[`node_modules/${name}`]?.version;
  if (!version) throw new Error(`${name} is not in package-lock.json: add it to devDependencies (npm install -D ${name}), so that every install takes its version from the lockfile`);
  return version;
}

/** `name@version` as package-lock.json holds it: an argument for `npm install`. */
export const locked = (name: string) => `${name}@${lockedVersion(name)}`;

/**
 * Gives the project in `dir` (its package.json written) this repository's package-lock.json with
 * the project's own root entry in place of ours: npm then keeps every package the project needs
 * at the version and place the lockfile holds, and leaves out the rest. A package the install
 * command names is resolved afresh, so name each at its exact version (`locked`).
 */
export function lockInto(dir: string): void {
  const project = readJson<Record<string, unknown>>(dir, "package.json");
  const fields = ["name", "version", "dependencies", "devDependencies", "optionalDependencies", "peerDependencies"];
  const own = Object.fromEntries(fields.filter((field) => project[field] !== undefined).map((field) => [field, project[field]]));
  const lock: Lockfile = { ...rootLock, name: String(project.name), version: project.version as string | undefined, packages: { ...rootLock.packages, "": own } };
  writeFileSync(join(dir, "package-lock.json"), `${JSON.stringify(lock, null, 2)}\n`);
}

/**
 * What the install in `dir` (its own package-lock.json) brought that the root lockfile does not
 * hold: `name@version` for each, but for spillway itself (the tarball) and the names in `except`
 * (a package installed on purpose at another exact version, such as the oldest Node claimed).
 */
export function unlocked(dir: string, except: string[] = []): string[] {
  const held = new Set(Object.entries(rootLock.packages).map(([path, entry]) => `${nameOf(path)}@${entry.version}`));
  return Object.entries(readJson<Lockfile>(dir, "package-lock.json").packages)
    .filter(([path, entry]) => path.includes("node_modules/") && !entry.link && !["spillway", ...except].includes(nameOf(path)))
    .map(([path, entry]) => `${nameOf(path)}@${entry.version}`)
    .filter((spec) => !held.has(spec))
    .sort();
}
