import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The dependency rule of the source tree (src/README.md): each layer imports only from layers
 * below it, and nothing imports in a circle. Layers, lowest first:
 *   core (with the Limiter port and the wire contract) ← config (and overrides/ and notify/,
 *   beside it: the config names a webhook, a limiter decorator sends it) ← service/stores (and
 *   the store decorators: local/, observe/; rls/) ← http ← gateway ← worker/node;
 * client/ reaches only core, config and service. Package entry points (src/*.ts that only
 * re-export) sit on top. Inside node/ the rooms have their own order, lowest first:
 *   args ← http/metrics/tracing ← serve/grpc ← cluster ← cli.
 */
const SRC = resolve(new URL("../../../src", import.meta.url).pathname);

const RANK: Record<string, number> = { core: 0, config: 1, overrides: 1, notify: 1, service: 2, stores: 2, local: 2, observe: 2, rls: 2, http: 3, gateway: 4, worker: 5, node: 5, client: 3, entry: 6 };
const CLIENT_MAY_USE = new Set(["core", "config", "service", "client"]);
/** The rooms of src/node/, lowest first: a room imports only rooms ranked at or below its own. */
const NODE_RANK: Record<string, number> = { args: 0, http: 1, metrics: 1, tracing: 1, serve: 2, grpc: 2, cluster: 3, cli: 4 };

/** The layer of a file under src/, by its folder (or "entry", for the package's faces at the top). */
export function layerOf(file: string): string {
  const path = relative(SRC, file);
  const [top] = path.split("/");
  if (path.includes("/")) {
    if (top! in RANK) return top!;
    throw new Error(`no layer for ${path}: add its folder to the layer table`);
  }
  return "entry";
}

/** The room of a file under src/node/ ("node/cli", …); a file directly in node/ has none. */
export function nodeRoomOf(file: string): string {
  const [top, room, ...rest] = relative(SRC, file).split("/");
  if (top !== "node") throw new Error(`${relative(SRC, file)} is not under src/node/`);
  if (rest.length === 0 || !(room! in NODE_RANK)) throw new Error(`no room for ${relative(SRC, file)}: src/node/ holds rooms only (add its folder to NODE_RANK)`);
  return room!;
}

/** Why an import from one file to another breaks the rule, or undefined when it may. */
export function wrongImport(file: string, target: string): string | undefined {
  const from = layerOf(file);
  const to = layerOf(target);
  const allowed = from === "client" ? CLIENT_MAY_USE.has(to) : RANK[to]! <= RANK[from]! && !(to === "client" && from !== "entry");
  if (!allowed) return `${relative(SRC, file)} (${from}) imports ${relative(SRC, target)} (${to})`;
  if (from === "node" && to === "node") {
    const [fromRoom, toRoom] = [nodeRoomOf(file), nodeRoomOf(target)];
    if (NODE_RANK[toRoom]! > NODE_RANK[fromRoom]!) return `${relative(SRC, file)} (node/${fromRoom}) imports ${relative(SRC, target)} (node/${toRoom}), a room above it`;
  }
  return undefined;
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
  it("every import points down (or sideways within a layer), and inside node/ down the rooms", () => {
    const wrong: string[] = [];
    for (const [file, imports] of graph) {
      for (const target of imports) {
        const why = wrongImport(file, target);
        if (why) wrong.push(why);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("src/node/ holds rooms only: every file is in a room the table ranks", () => {
    const loose = files.filter((file) => relative(SRC, file).startsWith("node/")).flatMap((file) => {
      try {
        nodeRoomOf(file);
        return [];
      } catch (error) {
        return [(error as Error).message];
      }
    });
    expect(loose).toEqual([]);
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
    expect(wrongImport(join(SRC, "http/x.ts"), join(SRC, "gateway/y.ts"))).toBe("http/x.ts (http) imports gateway/y.ts (gateway)");
    expect(wrongImport(join(SRC, "gateway/x.ts"), join(SRC, "http/y.ts"))).toBeUndefined();
    expect(wrongImport(join(SRC, "config/x.ts"), join(SRC, "service/y.ts"))).toBe("config/x.ts (config) imports service/y.ts (service)");
    expect(wrongImport(join(SRC, "client/x.ts"), join(SRC, "stores/y.ts"))).toBe("client/x.ts (client) imports stores/y.ts (stores)");
  });

  it("inside node/ an arrow running up the rooms is refused", () => {
    expect(wrongImport(join(SRC, "node/http/x.ts"), join(SRC, "node/cli/y.ts"))).toBe("node/http/x.ts (node/http) imports node/cli/y.ts (node/cli), a room above it");
    expect(wrongImport(join(SRC, "node/serve/x.ts"), join(SRC, "node/cluster/y.ts"))).toMatch(/a room above it$/);
    expect(wrongImport(join(SRC, "node/args/x.ts"), join(SRC, "node/metrics/y.ts"))).toMatch(/a room above it$/);
    // Down and sideways are fine: cli → cluster → serve/grpc → http/metrics → args.
    expect(wrongImport(join(SRC, "node/cli/x.ts"), join(SRC, "node/cluster/y.ts"))).toBeUndefined();
    expect(wrongImport(join(SRC, "node/serve/x.ts"), join(SRC, "node/grpc/y.ts"))).toBeUndefined();
    expect(wrongImport(join(SRC, "node/http/x.ts"), join(SRC, "node/args/y.ts"))).toBeUndefined();
    expect(() => nodeRoomOf(join(SRC, "node/loose.ts"))).toThrow(/src\/node\/ holds rooms only/);
  });
});
