import { existsSync, readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { MissingPackageError, SERVER_PACKAGES, importNeeding } from "../../../../src/node/cli/optional-packages.js";

// The server's packages are optional peers (src/node/cli/optional-packages.ts): no module that a
// library entry point or the `spillway` command loads at start may import one statically, or
// `npm install spillway hono` would break at import time. The package test proves it on the
// installed tarball; this walk names the import that broke it, in a second.

const src = fileURLToPath(new URL("../../../../src/", import.meta.url));
const STATIC_IMPORT = /^(?:import|export)\s+(?!type\b)(?:[^;]*?\sfrom\s+)?["']([^"']+)["']/gms;

/** Every bare package a module reaches through static imports, with the module that imports it. */
function staticPackages(entry: string): Map<string, string> {
  const seen = new Set<string>();
  const packages = new Map<string, string>();
  const walk = (file: string) => {
    if (seen.has(file) || !file.endsWith(".ts")) return;
    seen.add(file);
    for (const [, spec] of readFileSync(file, "utf8").matchAll(STATIC_IMPORT)) {
      if (spec!.startsWith(".")) {
        const path = resolve(dirname(file), spec!).replace(/\.js$/, ".ts");
        walk(existsSync(path) ? path : path.replace(/\.ts$/, "/index.ts"));
      } else if (!spec!.startsWith("node:")) {
        const name = spec!.startsWith("@") ? spec!.split("/").slice(0, 2).join("/") : spec!.split("/")[0]!;
        if (!packages.has(name)) packages.set(name, file.slice(src.length));
      }
    }
  };
  walk(resolve(src, entry));
  return packages;
}

describe("the server's optional packages", () => {
  it.each(["hono.ts", "node-middleware.ts", "redis.ts", "client/index.ts", "core/index.ts", "worker/index.ts", "node/cli/main.ts"])("%s imports none of them statically", (entry) => {
    const reached = staticPackages(entry);
    const optional = SERVER_PACKAGES.filter((name) => reached.has(name)).map((name) => `${name} (imported by src/${reached.get(name)})`);
    expect(optional).toEqual([]);
  });

  it("the walk finds them where they are imported (the modules the CLI loads with import())", () => {
    expect(staticPackages("node/metrics/observability.ts").get("prom-client")).toBe("node/metrics/prometheus.ts");
    expect(staticPackages("node/grpc/serve.ts").has("@grpc/grpc-js")).toBe(true);
    expect(staticPackages("node/tracing/otel.ts").has("@opentelemetry/sdk-trace-base")).toBe(true);
  });

  it("a missing one is a MissingPackageError that says what to install; any other error passes through", async () => {
    const name = "spillway-test-no-such-package";
    const missing = await importNeeding(() => import(name), [name], "--feature").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(MissingPackageError);
    expect((missing as Error).message).toBe("--feature needs spillway-test-no-such-package, which is not installed: npm install spillway-test-no-such-package");
    const other = await importNeeding(() => Promise.reject(new Error("boom")), ["prom-client"], "--feature").catch((error: unknown) => error);
    expect((other as Error).message).toBe("boom");
  });
});
