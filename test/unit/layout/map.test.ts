import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

// src/README.md is the map of the source tree: one row per folder. It stays true: every folder
// it names exists, and every folder of src/ has its row (a folder below a room, such as
// stores/redis/, is named in its parent's row).
const SRC = new URL("../../../src/", import.meta.url).pathname;
const MAP = readFileSync(join(SRC, "README.md"), "utf8");

/** The folders the map's table names, in its first column: `core/`, `node/cli/`, … */
export function mapFolders(text: string): string[] {
  return [...text.matchAll(/^\| `([a-z-]+(?:\/[a-z-]+)*)\/` \|/gm)].map((match) => match[1]!);
}

function folders(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? [relative(SRC, path), ...folders(path)] : [];
  });
}

/** What a room's main file must open with: a comment on what the room owns. */
const MAIN_FILES = ["node/cli/main.ts", "node/serve/server.ts", "node/http/gateway.ts", "node/grpc/server.ts", "node/cluster/primary.ts", "node/metrics/observability.ts", "node/args/serve.ts", "config/config.ts", "service/service.ts"];

describe("src/README.md, the map of the tree", () => {
  const named = mapFolders(MAP);

  it("reads the table's folders (the parser can fail)", () => {
    expect(mapFolders("| `core/` | x |\n| `node/cli/` | y |\n| core | z |")).toEqual(["core", "node/cli"]);
    expect(named.length).toBeGreaterThanOrEqual(20);
  });

  it("names only folders that exist", () => {
    expect(named.filter((folder) => !existsSync(join(SRC, folder)) || !statSync(join(SRC, folder)).isDirectory())).toEqual([]);
  });

  it("names every folder of src/: a row each for the top folders and node/'s rooms, deeper ones in their parent's row", () => {
    const missing = folders(SRC).filter((folder) => {
      if (named.includes(folder)) return false;
      const parts = folder.split("/");
      const mustHaveRow = parts.length === 1 || (parts[0] === "node" && parts.length === 2);
      if (mustHaveRow) return true;
      // A deeper folder (stores/redis/, stores/redis/lua/): its name in the row of a folder above it.
      const rows = MAP.split("\n").filter((line) => named.some((row) => line.startsWith(`| \`${row}/\``) && folder.startsWith(`${row}/`)));
      return !rows.some((line) => line.includes(`\`${parts.at(-1)}/\``) || line.includes(`${parts.at(-1)}/`));
    });
    expect(missing).toEqual([]);
  });

  it("src/node/ holds no file of its own, src/ only the package's entry faces and this map", () => {
    const files = (dir: string) => readdirSync(join(SRC, dir)).filter((name) => statSync(join(SRC, dir, name)).isFile());
    expect(files("node")).toEqual([]);
    expect(files(".").sort()).toEqual(["README.md", "hono.ts", "node-middleware.ts", "redis.ts"]);
  });

  it("each room's main file opens with a comment on what it owns", () => {
    expect(MAIN_FILES.filter((file) => !/^\/[/*]/.test(readFileSync(join(SRC, file), "utf8")))).toEqual([]);
  });
});
