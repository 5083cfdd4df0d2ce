import { type ChildProcess, execFile, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { locked, lockInto, unlocked } from "../../scripts/locked-versions.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { extractSnippets } from "./snippets.js";

// What a newcomer meets first, from the packed tarball: `npm install spillway hono` and nothing
// else (light, no install-script warning, every entry point loads without the server's
// optional packages), the documents in the box with every README link resolving, the command's
// help; then, with the server's optional packages, the README's Redis swap and docs/envoy.md's
// grpc-js client over the shipped protos; and the README's gateway quick start.

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const rootPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  version: string;
  exports: Record<string, unknown>;
  peerDependenciesMeta: Record<string, { optional: boolean }>;
};
/** The server's optional peers: never installed with the library. */
const OPTIONAL = Object.keys(rootPackage.peerDependenciesMeta).filter((name) => rootPackage.peerDependenciesMeta[name]!.optional);
const nodeEntries = Object.keys(rootPackage.exports)
  .filter((entry) => !entry.startsWith("./worker") && entry !== "./package.json" && !entry.includes("*"))
  .map((entry) => `spillway/${entry.slice(2)}`);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, whatever its exit code; `timeout` kills one that never exits. */
async function sh(file: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): Promise<Ran> {
  try {
    const { stdout, stderr } = await run(file, args, { cwd, maxBuffer: 64 * 1024 * 1024, timeout: 120_000, env: { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: number | string; stdout?: string; stderr?: string; message: string };
    if (typeof failed.code !== "number") throw new Error(`${file} ${args.join(" ")} did not finish in ${cwd}: ${failed.message}\n${failed.stdout ?? ""}${failed.stderr ?? ""}`);
    return { code: failed.code, stdout: failed.stdout ?? "", stderr: failed.stderr ?? "" };
  }
}

let work: string;
let light: string;
let installOutput: string;
let redis: RedisServer | undefined;
const spillwayBin = () => join(light, "node_modules", "spillway", "bin", "spillway.mjs");
const node = (args: string[], cwd = light, env: NodeJS.ProcessEnv = {}) => sh(process.execPath, args, cwd, env);

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "spillway-installed-"));
  light = join(work, "light");
  mkdirSync(light);
  writeFileSync(join(light, "package.json"), JSON.stringify({ name: "light", private: true, type: "module" }));
  lockInto(light);
  // README's install line, as written: the library and hono, nothing else (at the versions our lockfile holds).
  const installed = await sh("npm", ["install", inject("tarball"), locked("hono"), "--no-audit", "--no-fund", "--prefer-offline"], light);
  if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.stdout}${installed.stderr}`);
  installOutput = installed.stdout + installed.stderr;
  redis = await startRedis();
}, 300_000);

afterAll(async () => {
  await redis?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

/** Every package directory under node_modules (scoped ones counted one by one). */
function installedPackages(dir: string): string[] {
  const modules = join(dir, "node_modules");
  return readdirSync(modules)
    .filter((name) => !name.startsWith("."))
    .flatMap((name) => (name.startsWith("@") ? readdirSync(join(modules, name)).map((scoped) => `${name}/${scoped}`) : [name]));
}

describe("npm install spillway hono", () => {
  it("adds at most 3 packages besides hono (spillway, @hono/node-server, yaml), and npm prints no install-script warning", () => {
    const packages = installedPackages(light).filter((name) => name !== "hono");
    expect(packages.length, packages.join(" ")).toBeLessThanOrEqual(3);
    expect(packages).toContain("spillway");
    expect(installOutput.split("\n").filter((line) => /install-scripts|install script/i.test(line))).toEqual([]);
  });

  it("installs only versions package-lock.json holds", () => {
    expect(unlocked(light)).toEqual([]);
  });

  it("installs none of the server's optional packages, and every entry point loads without them", async () => {
    expect(OPTIONAL.sort()).toEqual([
      "@grpc/grpc-js",
      "@grpc/proto-loader",
      "@opentelemetry/api",
      "@opentelemetry/core",
      "@opentelemetry/exporter-trace-otlp-http",
      "@opentelemetry/exporter-trace-otlp-proto",
      "@opentelemetry/resources",
      "@opentelemetry/sdk-trace-base",
      "ioredis",
      "prom-client",
      "uplot",
    ]);
    for (const name of [...OPTIONAL, "protobufjs"]) expect(existsSync(join(light, "node_modules", name)), name).toBe(false);
    writeFileSync(join(light, "entries.mjs"), `${nodeEntries.map((entry) => `await import(${JSON.stringify(entry)});`).join("\n")}\nconsole.log("ok");\n`);
    expect(await node(["entries.mjs"])).toMatchObject({ code: 0, stdout: "ok\n" });
  });

  // zod is 8 MB installed; what Spillway uses of it is bundled into dist/vendor/zod.js by the build.
  it("installs no zod: no shipped module or declaration imports it, and the vendored copy validates", async () => {
    expect(existsSync(join(light, "node_modules", "zod")), "node_modules/zod").toBe(false);
    const installed = join(light, "node_modules", "spillway");
    const manifest = JSON.parse(readFileSync(join(installed, "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
    for (const field of ["dependencies", "peerDependencies", "optionalDependencies"]) expect(manifest[field]?.zod, field).toBeUndefined();
    expect(readFileSync(join(installed, "dist", "vendor", "zod.LICENSE"), "utf8")).toMatch(/^MIT License/);
    const importsZod = readdirSync(join(installed, "dist"), { recursive: true, encoding: "utf8" })
      .filter((file) => /\.(js|d\.ts)$/.test(file) && file !== join("vendor", "zod.js"))
      .filter((file) => /(?:\bfrom\s*|\bimport\s*\(?\s*)["']zod(?:\/[^"']*)?["']/.test(readFileSync(join(installed, "dist", file), "utf8")));
    expect(importsZod).toEqual([]);
    // A config check runs every schema: the vendored zod, with Spillway's words on its findings.
    writeFileSync(join(light, "typo.json"), JSON.stringify({ policies: [{ name: "per-minute", limt: 60, period: "1m" }] }));
    const check = await node([spillwayBin(), "check", "--config", "typo.json"]);
    expect(check.code).toBe(2);
    expect(check.stderr).toContain('policies.per-minute.limt: is not a known field (did you mean "limit"?)');
    writeFileSync(join(light, "good.json"), JSON.stringify({ policies: [{ name: "per-minute", limit: 60, period: "1m" }] }));
    expect(await node([spillwayBin(), "check", "--config", "good.json"])).toMatchObject({ code: 0 });
  });

  // The maps carry no sources (they were 60 % of dist/): a stack under --enable-source-maps still
  // names the TypeScript file and line of Spillway's frames. dist/ was 2.76 MiB on 2026-12-07 (the
  // xDS client, ext_authz, traces, provider presets); with sources in its maps it would be twice that.
  it("ships source maps without their sources: dist/ stays under 3.25 MB and a stack names Spillway's TypeScript lines", async () => {
    const dist = join(light, "node_modules", "spillway", "dist");
    const files = readdirSync(dist, { recursive: true, encoding: "utf8" }).filter((file) => /\.(js|map|ts)$/.test(file));
    const bytes = (suffix: string) => files.filter((file) => file.endsWith(suffix)).reduce((sum, file) => sum + readFileSync(join(dist, file)).length, 0);
    expect(bytes(".js.map")).toBeGreaterThan(0);
    expect(bytes(".js") + bytes(".js.map") + bytes(".d.ts")).toBeLessThan(3.25 * 1024 * 1024);
    const map = JSON.parse(readFileSync(join(dist, "core", "policy.js.map"), "utf8")) as { sources: string[]; sourcesContent?: unknown };
    expect(map.sourcesContent).toBeUndefined();
    expect(map.sources).toEqual(["../../src/core/policy.ts"]);
    writeFileSync(join(light, "stack.mjs"), `import { parsePolicy } from "spillway/core";\ntry { parsePolicy({ name: "p", limit: -1, period: "1m" }, "policy"); } catch (error) { console.log(error.stack); }\n`);
    const traced = await node(["--enable-source-maps", "stack.mjs"]);
    expect(traced.stdout).toMatch(/\/node_modules\/spillway\/src\/core\/[a-z-]+\.ts:\d+:\d+/);
  });

  it("a feature whose package is missing says which to install, in one line", async () => {
    writeFileSync(
      join(light, "redis.mjs"),
      `import { RedisStore } from "spillway/redis";\ntry { new RedisStore({ url: "redis://127.0.0.1:6379" }); } catch (error) { console.log(error.message); }\n`,
    );
    expect((await node(["redis.mjs"])).stdout).toBe("RedisStore needs the ioredis package, which is not installed: npm install ioredis\n");
    writeFileSync(join(light, "r.yaml"), "domain: d\ndescriptors:\n  - key: k\n    rate_limit: { unit: second, requests_per_unit: 1 }\n");
    const rls = await node([spillwayBin(), "serve", "--store", "memory", "--port", "0", "--no-metrics", "--rls-port", "0", "--rls-config", "r.yaml"]);
    expect(rls.code).toBe(2);
    expect(rls.stderr).toBe("spillway: --rls-port (Envoy's rate limit service) needs @grpc/grpc-js and @grpc/proto-loader, which are not installed: npm install @grpc/grpc-js @grpc/proto-loader\n");
    const command = await node([spillwayBin(), "rls"]);
    expect(command.code).toBe(2);
    expect(command.stderr).toBe("spillway: the rls command needs @grpc/grpc-js, @grpc/proto-loader, prom-client and ioredis, which are not installed: npm install @grpc/grpc-js @grpc/proto-loader prom-client ioredis\n");
    // Traces asked for without their packages: one line naming them all, not a server without traces.
    writeFileSync(join(light, "traced.json"), JSON.stringify({ policies: [{ name: "per-minute", limit: 60, period: "1m" }] }));
    const traced = await node([spillwayBin(), "serve", "--config", "traced.json", "--store", "memory", "--port", "0", "--no-metrics"], light, { OTEL_TRACES_EXPORTER: "otlp" });
    expect(traced.code).toBe(2);
    expect(traced.stderr).toContain(
      "spillway: tracing (OTEL_TRACES_EXPORTER=otlp) needs @opentelemetry/api, @opentelemetry/core, @opentelemetry/resources, @opentelemetry/sdk-trace-base, @opentelemetry/exporter-trace-otlp-proto and @opentelemetry/exporter-trace-otlp-http, which are not installed: npm install @opentelemetry/api @opentelemetry/core @opentelemetry/resources @opentelemetry/sdk-trace-base @opentelemetry/exporter-trace-otlp-proto @opentelemetry/exporter-trace-otlp-http\n",
    );
  });

  it("rateLimit() refuses an unknown option in plain JavaScript, naming it and Spillway's equivalent", async () => {
    writeFileSync(
      join(light, "options.mjs"),
      `import { MemoryStore, rateLimit } from "spillway/hono";
try {
  rateLimit({ store: new MemoryStore(), policies: { name: "p", limit: 5, period: "1m" }, key: () => "k", windowMs: 60000 });
} catch (error) {
  console.log(error.name, error.message);
}\n`,
    );
    expect((await node(["options.mjs"])).stdout).toMatch(/^TypeError rateLimit: unknown option "windowMs": Spillway's equivalent is a policy's period/);
  });

  it("spillway --help, serve --help and --version exit 0", async () => {
    const help = await node([spillwayBin(), "--help"]);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain("spillway serve");
    const serveHelp = await node([spillwayBin(), "serve", "--help"]);
    expect(serveHelp.code).toBe(0);
    expect(serveHelp.stdout).toContain("--rls-host ADDR");
    expect(await node([spillwayBin(), "--version"])).toMatchObject({ code: 0, stdout: `${rootPackage.version}\n` });
  });
});

describe("the documents in the box", () => {
  /** The relative links of a Markdown file (no URL, no bare anchor), without their #anchor. */
  const linksOf = (file: string) =>
    [...readFileSync(file, "utf8").matchAll(/\]\(([^)\s]+)\)/g)]
      .map((match) => match[1]!)
      .filter((target) => !/^[a-z]+:/i.test(target) && !target.startsWith("#"))
      .map((target) => target.split("#", 1)[0]!);

  it("docs/ and BENCHMARKS.md are installed, and every README link resolves inside the installed package", () => {
    const installed = join(light, "node_modules", "spillway");
    expect(existsSync(join(installed, "docs", "serve.md"))).toBe(true);
    const links = linksOf(join(installed, "README.md"));
    expect(links.length).toBeGreaterThan(10);
    const dead = links.filter((target) => !existsSync(join(installed, target)));
    expect(dead).toEqual([]);
  });

  it("every link of docs/*.md resolves too (a file the package does not ship is named in words, never linked)", () => {
    const docs = join(light, "node_modules", "spillway", "docs");
    const dead = readdirSync(docs)
      .filter((name) => name.endsWith(".md"))
      .flatMap((name) => linksOf(join(docs, name)).map((target) => ({ name, target })))
      .filter(({ target }) => !existsSync(normalize(join(docs, target))));
    expect(dead).toEqual([]);
  });
});

describe("with the server's optional packages installed", () => {
  let server: string;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    server = join(work, "server");
    mkdirSync(server);
    writeFileSync(join(server, "package.json"), JSON.stringify({ name: "server", private: true, type: "module" }));
    lockInto(server);
    const packages = [locked("hono"), locked("ioredis"), locked("@grpc/grpc-js"), locked("@grpc/proto-loader")];
    const installed = await sh("npm", ["install", inject("tarball"), ...packages, "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], server);
    if (installed.code !== 0) throw new Error(`npm install failed:\n${installed.stderr}`);
  }, 300_000);

  it("installs only versions package-lock.json holds", () => {
    expect(unlocked(server)).toEqual([]);
  });
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  });

  it("README's Redis swap, as written, answers 200 on its first request and the script exits", async () => {
    const block = extractSnippets("README.md", readFileSync(join(root, "README.md"), "utf8")).find((snippet) => snippet.run && snippet.code.includes("new RedisStore"));
    expect(block, "README has a run block with new RedisStore").toBeDefined();
    writeFileSync(join(server, "swap.mjs"), block!.code.replaceAll("redis://127.0.0.1:6379", redis!.url));
    for (let runs = 0; runs < 3; runs++) {
      const ran = await node(["swap.mjs"], server);
      expect(ran, ran.stderr).toMatchObject({ code: 0, stdout: "200\n" });
    }
  }, 180_000);

  it("docs/envoy.md's grpc-js client, over the protos spillway/proto/* exports, asks spillway serve --rls-port", async () => {
    const envoy = extractSnippets("docs/envoy.md", readFileSync(join(root, "docs", "envoy.md"), "utf8"));
    const config = envoy.find((snippet) => snippet.kind === "skip" && snippet.lang === "yaml" && snippet.code.startsWith("domain: edge"));
    const client = envoy.find((snippet) => snippet.kind === "js" && snippet.code.includes("ShouldRateLimit"));
    expect(config && client, "envoy.md has the edge config and the client").toBeTruthy();
    writeFileSync(join(server, "edge.yaml"), config!.code);
    const port = await freePort();
    writeFileSync(join(server, "rls-client.mjs"), client!.code.replace("127.0.0.1:8081", `127.0.0.1:${port}`));
    const bin = join(server, "node_modules", "spillway", "bin", "spillway.mjs");
    const serving = spawn(process.execPath, [bin, "serve", "--store", "memory", "--no-metrics", "--port", "0", "--rls-port", String(port), "--rls-config", "edge.yaml"], { cwd: server, stdio: ["ignore", "pipe", "pipe"] });
    children.push(serving);
    await new Promise<void>((resolve, reject) => {
      let output = "";
      serving.stdout!.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes("listening on")) resolve();
      });
      serving.once("exit", (code) => reject(new Error(`spillway serve exited (${code}): ${output}`)));
    });
    const promised = [...client!.code.matchAll(/^\s*\/\/ → (.*)$/gm)].map((match) => match[1]!.trim());
    const ran = await node(["rls-client.mjs"], server);
    expect(ran, ran.stderr).toMatchObject({ code: 0 });
    expect(ran.stdout.trim().split("\n")).toEqual(promised);
  }, 60_000);
});

describe("README's gateway quick start", () => {
  const children: ChildProcess[] = [];
  afterAll(() => {
    for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  });

  it("its origin, its config and its command: the curl loop gets three 200s, then a 429", async () => {
    const readme = extractSnippets("README.md", readFileSync(join(root, "README.md"), "utf8"));
    const shell = readme.find((snippet) => snippet.kind === "sh" && snippet.code.includes("--config gateway.json"));
    const config = readme[readme.indexOf(shell!) - 1]!;
    expect(config.kind).toBe("json");
    // The README's ports, 8788 and 8787, may be taken on a shared machine: free ones instead.
    const originPort = await freePort();
    const origin = /node -e '([^']+)'/.exec(shell!.code)![1]!.replace("8788", String(originPort));
    writeFileSync(join(light, "gateway.json"), config.code.replace("127.0.0.1:8788", `127.0.0.1:${originPort}`));
    const originProcess = spawn(process.execPath, ["-e", origin], { cwd: light, stdio: "ignore" });
    children.push(originProcess);
    for (let tries = 0; tries < 100; tries++) {
      if (await fetch(`http://127.0.0.1:${originPort}/`).then(() => true, () => false)) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const gateway = spawn(process.execPath, [spillwayBin(), "serve", "--config", "gateway.json", "--store", "memory", "--port", "0"], { cwd: light, stdio: ["ignore", "pipe", "pipe"] });
    children.push(gateway);
    const url = await new Promise<string>((resolve, reject) => {
      let output = "";
      gateway.stdout!.on("data", (chunk: Buffer) => {
        output += chunk.toString();
        const found = /listening on (http:\/\/\S+)/.exec(output)?.[1];
        if (found) resolve(found);
      });
      gateway.once("exit", (code) => reject(new Error(`spillway serve exited (${code}): ${output}`)));
    });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) statuses.push((await fetch(`${url}/api/hello`)).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    // A path no route matches goes to the origin unlimited.
    const unmatched: number[] = [];
    for (let i = 0; i < 5; i++) unmatched.push((await fetch(`${url}/elsewhere`)).status);
    expect(unmatched).toEqual([200, 200, 200, 200, 200]);
  }, 60_000);
});
