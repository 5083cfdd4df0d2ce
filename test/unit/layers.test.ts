import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The dependency rule of the source tree: each layer imports only from layers below it, and
 * nothing imports in a circle. Layers, lowest first:
 *   core ← limiter/config ←  (and overrides/ and notify/, beside config: the config names a webhook, a limiter decorator sends it) api/stores (and the store decorators: local/, observe/) ← http ← gateway ← worker/node;
 * client/ reaches only core, limiter/config and api. Package entry points (src/*.ts that
 * only re-export) sit on top.
 */
const SRC = resolve(new URL("../../src", import.meta.url).pathname);

const RANK: Record<string, number> = { core: 0, base: 1, overrides: 1, notify: 1, api: 2, stores: 2, local: 2, observe: 2, rls: 2, http: 3, gateway: 4, worker: 5, node: 5, client: 3, entry: 6 };
const CLIENT_MAY_USE = new Set(["core", "base", "api", "client"]);

/** The layer of a file under src/, by its folder (or its name, for the few top-level modules). */
export function layerOf(file: string): string {
  const path = relative(SRC, file);
  const [top] = path.split("/");
  if (path.includes("/")) {
    if (top === "redis") return "stores";
    if (top! in RANK) return top!;
    throw new Error(`no layer for ${path}: add its folder to the layer table`);
  }
  // wire.ts imports nothing ("any layer may read this"): it sits with the base.
  if (["limiter.ts", "config.ts", "config-schema.ts", "wire.ts"].includes(path)) return "base";
  if (["service.ts", "requests.ts", "rpc-errors.ts"].includes(path)) return "api";
  return "entry";
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Relative imports of a file (static, dynamic and `import type` alike: a type is a dependency too). */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const specifiers = [...text.matchAll(/(?:^|\s)(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"|import\(\s*"(\.[^"]+)"\s*\)/gm)].map((match) => match[1] ?? match[2]!);
  return specifiers.map((specifier) => resolve(dirname(file), specifier.replace(/\.js$/, ".ts"))).filter((path) => path.startsWith(SRC) && path.endsWith(".ts"));
}

const files = sourceFiles(SRC);
const graph = new Map(files.map((file) => [file, importsOf(file)]));

describe("source layers", () => {
  it("every import points down (or sideways within a layer)", () => {
    const wrong: string[] = [];
    for (const [file, imports] of graph) {
      const from = layerOf(file);
      for (const target of imports) {
        const to = layerOf(target);
        const allowed = from === "client" ? CLIENT_MAY_USE.has(to) : RANK[to]! <= RANK[from]! && !(to === "client" && from !== "entry");
        if (!allowed) wrong.push(`${relative(SRC, file)} (${from}) imports ${relative(SRC, target)} (${to})`);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("runtime-bound packages only in the runtime folders and the Redis store", () => {
    const runtimeBound = /from\s+"(node:[^"]+|cloudflare:[^"]+|ioredis|@hono\/node-server)"/g;
    const wrong: string[] = [];
    for (const file of files) {
      const path = relative(SRC, file);
      if (/^(node|worker)\//.test(path) || /^stores\/redis/.test(path) || /^redis\//.test(path)) continue;
      for (const match of readFileSync(file, "utf8").matchAll(runtimeBound)) wrong.push(`${path} imports ${match[1]}`);
    }
    expect(wrong).toEqual([]);
  });

  it("no import circles", () => {
    const circles: string[] = [];
    const state = new Map<string, "open" | "done">();
    const stack: string[] = [];
    const visit = (file: string) => {
      state.set(file, "open");
      stack.push(file);
      for (const target of graph.get(file) ?? []) {
        if (state.get(target) === "open") circles.push([...stack.slice(stack.indexOf(target)), target].map((path) => relative(SRC, path)).join(" → "));
        else if (!state.has(target)) visit(target);
      }
      stack.pop();
      state.set(file, "done");
    };
    for (const file of files) if (!state.has(file)) visit(file);
    expect(circles).toEqual([]);
  });

  it("the layer table itself can fail: an upward import is caught", () => {
    expect(layerOf(join(SRC, "core/x.ts"))).toBe("core");
    expect(RANK[layerOf(join(SRC, "gateway/x.ts"))]! > RANK[layerOf(join(SRC, "http/x.ts"))]!).toBe(true);
  });
});
