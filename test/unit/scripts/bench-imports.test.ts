import { readFileSync, readdirSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The benchmarks measure what users get: scripts/bench reaches src/ only through the
 * package's entry points (what `spillway/*` exports), never an internal module, directly or
 * through a helper it imports from scripts/ or test/.
 */
const ROOT = resolve(new URL("../../..", import.meta.url).pathname);
const SRC = join(ROOT, "src");
const BENCH = join(ROOT, "scripts/bench");

/** src/ files behind package.json's exports (the .ts each dist/ entry is built from). */
const ENTRY_POINTS = new Set(Object.values(JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).exports as Record<string, string | { default: string }>)
  .flatMap((target) => (typeof target === "string" ? [] : [target.default]))
  .map((built) => join(SRC, built.replace(/^\.\/dist\//, "").replace(/\.js$/, ".ts"))));

/**
 * Benches that still reach internals, each with why. The list only shrinks: an entry that no
 * longer needs to be here fails the test too.
 */
const NOT_YET: Record<string, string> = {
  // bench:cost counts what the platform bills inside each key's object: the probe subclasses
  // LimiterObject and wraps its storage, which no public API reaches (nor should).
  "scripts/bench/storage-probe.ts": "wraps LimiterObject's storage to count rows written",
  "scripts/bench/cost-scenarios.bench-run.ts": "reads the storage probe's counts (its types)",
  "scripts/bench/cost-worker.ts": "binds the storage probe as the metered limiter object",
  // bench:traces also times two spans per decision inside one process (beside the servers' CPU per
  // request): the tracer port and the traced limiter are internal, as they should stay.
  "scripts/bench/traces.ts": "times the traced limiter in process (src/observe/traced-limiter.ts, src/node/tracing/otel.ts)",
};

function tsFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return tsFiles(path);
    return /\.(ts|mts|mjs|js)$/.test(entry.name) && !entry.name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Relative imports of a file (static, dynamic, `import type` and re-exports alike), resolved to the .ts that exists. */
export function importsOf(file: string, text = readFileSync(file, "utf8")): string[] {
  const specifiers = [...text.matchAll(/(?:^|\s)(?:import|export)\s[^;]*?from\s+"(\.[^"]+)"|import\(\s*"(\.[^"]+)"\s*\)|^import\s+"(\.[^"]+)"/gm)].map((match) => match[1] ?? match[2] ?? match[3]!);
  return specifiers.map((specifier) => resolve(dirname(file), specifier).replace(/\.js$/, ".ts"));
}

/**
 * Every src/ module a bench reaches through relative imports, stopping at src/ (its own
 * imports are src's business) and at the files excused in NOT_YET.
 */
function srcReachedFrom(bench: string): string[] {
  const reached = new Set<string>();
  const seen = new Set<string>([bench]);
  const queue = [bench];
  while (queue.length > 0) {
    const file = queue.pop()!;
    if (file !== bench && relative(ROOT, file) in NOT_YET) continue;
    let targets: string[];
    try {
      targets = importsOf(file);
    } catch {
      continue; // a .json, or a file that is not there: tsc's business
    }
    for (const target of targets) {
      if (target.startsWith(`${SRC}/`)) reached.add(target);
      else if (!seen.has(target) && /\.(ts|mts|mjs|js)$/.test(target)) {
        seen.add(target);
        queue.push(target);
      }
    }
  }
  return [...reached];
}

describe("benchmarks use the public API", () => {
  const benches = tsFiles(BENCH);
  const internalsOf = new Map(benches.map((bench) => [relative(ROOT, bench), srcReachedFrom(bench).filter((path) => !ENTRY_POINTS.has(path)).map((path) => relative(ROOT, path))]));

  it("knows the entry points", () => {
    expect([...ENTRY_POINTS].map((path) => relative(ROOT, path)).sort()).toEqual(["src/client/index.ts", "src/core/index.ts", "src/hono.ts", "src/node-middleware.ts", "src/redis.ts", "src/worker/api.ts", "src/worker/index.ts"]);
  });

  it("scripts/bench imports nothing under src/ but the entry points", () => {
    const wrong = [...internalsOf].filter(([bench, internals]) => internals.length > 0 && !(bench in NOT_YET)).map(([bench, internals]) => `${bench} → ${internals.join(", ")}`);
    expect(wrong).toEqual([]);
  });

  it("the list of benches not yet on the public API only shrinks", () => {
    const stale = Object.keys(NOT_YET).filter((file) => srcReachedFrom(join(ROOT, file)).every((path) => ENTRY_POINTS.has(path)));
    expect(stale).toEqual([]);
  });

  it("can fail: an internal import is caught, an entry point is not", () => {
    const bench = join(BENCH, "x.ts");
    const reached = importsOf(bench, 'import { RedisStore } from "../../src/redis.js";\nimport { scriptFor } from "../../src/stores/redis/scripts.js";\nconst m = await import("../../src/node/serve/server.js");');
    expect(reached.filter((path) => !ENTRY_POINTS.has(path)).map((path) => relative(ROOT, path))).toEqual(["src/stores/redis/scripts.ts", "src/node/serve/server.ts"]);
  });
});

describe("bin/", () => {
  it("imports only bin/, src/ and dist/ (never scripts/ or test/, which do not ship)", () => {
    const bin = join(ROOT, "bin");
    const wrong = tsFiles(bin).flatMap((file) => importsOf(file).filter((target) => !/^(bin|src|dist)\//.test(relative(ROOT, target))).map((target) => `${relative(ROOT, file)} → ${relative(ROOT, target)}`));
    expect(wrong).toEqual([]);
  });

  it("can fail: the checkout's hook imported from scripts/ is caught", () => {
    expect(importsOf(join(ROOT, "bin/x.mjs"), 'await import("../scripts/ts-hooks.mjs");').map((path) => relative(ROOT, path))).toEqual(["scripts/ts-hooks.mjs"]);
  });
});
