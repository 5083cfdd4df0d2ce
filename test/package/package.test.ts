import { type ChildProcess, execFile, spawn } from "node:child_process";
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { locked, lockInto, unlocked } from "../../scripts/locked-versions.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// The package as a user gets it: `npm pack` (which builds dist/ through `prepack`), the tarball
// installed into an empty project with its dependencies from the registry (at the versions our
// package-lock.json holds: scripts/locked-versions.ts), then used there with plain Node, with
// TypeScript and through the `spillway` command. Nothing here reads src/.

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const fixtures = fileURLToPath(new URL("./fixtures/", import.meta.url));
const rootPackage = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  exports: Record<string, unknown>;
};
/** Entry points Node can load (spillway/worker imports cloudflare:workers, which only workerd has). */
const nodeEntries = Object.keys(rootPackage.exports)
  .filter((entry) => !entry.startsWith("./worker") && entry !== "./package.json" && !entry.includes("*"))
  .map((entry) => `spillway/${entry.slice(2)}`);

/** Runs a command and answers its stdout; its output is shown only in a failure's message. */
async function sh(file: string, args: string[], cwd: string): Promise<string> {
  try {
    const env = { ...process.env, NO_COLOR: "1", FORCE_COLOR: "0", REDIS_URL: redis?.url };
    const { stdout } = await run(file, args, { cwd, maxBuffer: 64 * 1024 * 1024, env });
    return stdout;
  } catch (error) {
    const failed = error as { stdout?: string; stderr?: string; message: string };
    throw new Error(`${file} ${args.join(" ")} failed in ${cwd}:\n${failed.stdout ?? ""}${failed.stderr ?? failed.message}`);
  }
}

const bin = (name: string) => join(root, "node_modules", ".bin", name);
const node = (args: string[], cwd: string) => sh(process.execPath, args, cwd);

let work: string;
let tarball: string;
let packedFiles: string[];
let consumer: string;
/** A redis-server of our own, like the redis project's: the fixtures get its URL as REDIS_URL. */
let redis: RedisServer | undefined;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), "spillway-package-"));
  redis = await startRedis();
  tarball = inject("tarball");
  packedFiles = inject("packedFiles");

  consumer = join(work, "consumer");
  mkdirSync(consumer);
  writeFileSync(join(consumer, "package.json"), JSON.stringify({ name: "consumer", private: true, type: "module" }));
  lockInto(consumer);
  // ioredis: an optional peer, which the fixtures' RedisStore and the typed consumer need.
  await sh("npm", ["install", tarball, locked("@types/node"), locked("ioredis"), "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], consumer);
  for (const file of ["decide.mjs", "esm.mjs", "cjs.cjs"]) copyFileSync(join(fixtures, file), join(consumer, file));
}, 300_000);

afterAll(async () => {
  await redis?.stop();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe("the packed tarball", () => {
  it("holds the build, the command, the gRPC protos and the documents; no sources, tests, benchmark code or CI", () => {
    for (const file of ["package.json", "README.md", "LICENSE", "CHANGELOG.md", "BENCHMARKS.md", "docs/serve.md", "bin/spillway.mjs", "dist/node/cli/main.js", "dist/stores/redis/lua/gcra.lua", "proto/envoy/service/ratelimit/v3/rls.proto", "proto/LICENSE"]) {
      expect(packedFiles).toContain(file);
    }
    const stray = packedFiles.filter((file) => !/^(dist|bin|proto|docs)\//.test(file) && !/^(package\.json|README\.md|LICENSE|CHANGELOG\.md|BENCHMARKS\.md|spillway\.schema\.json)$/.test(file));
    expect(stray).toEqual([]);
    expect(packedFiles.filter((file) => /\.ts$/.test(file) && !file.endsWith(".d.ts"))).toEqual([]);
  });

  it("installs, with its dependencies and peers, only versions package-lock.json holds", () => {
    expect(unlocked(consumer)).toEqual([]);
  });

  it("installs without install scripts, and says where it comes from and the Node it needs", () => {
    const installed = JSON.parse(readFileSync(join(consumer, "node_modules", "spillway", "package.json"), "utf8")) as Record<string, Record<string, string> | undefined>;
    for (const script of ["preinstall", "install", "postinstall", "prepare"]) expect(installed.scripts?.[script], script).toBeUndefined();
    expect(installed.repository?.url).toMatch(/^git\+https:\/\/github\.com\//);
    expect(installed.engines?.node).toBe(">=22.12");
  });

  it("passes publint and Are the Types Wrong (ESM only: require() of ESM is the CommonJS story)", async () => {
    await node([bin("publint"), "run", tarball, "--strict"], work);
    await node([bin("attw"), tarball, "--profile", "esm-only", "--no-definitely-typed", "--format", "ascii"], work);
  });
});

describe("installed into an empty project", () => {
  it("every entry point loads from plain Node, with import and with require", async () => {
    const imports = nodeEntries.map((entry) => `await import(${JSON.stringify(entry)});`).join("\n");
    const requires = nodeEntries.map((entry) => `require(${JSON.stringify(entry)});`).join("\n");
    writeFileSync(join(consumer, "load.mjs"), `${imports}\nconsole.log("ok");\n`);
    writeFileSync(join(consumer, "load.cjs"), `${requires}\nconsole.log("ok");\n`);
    expect((await node(["load.mjs"], consumer)).trim()).toBe("ok");
    expect((await node(["load.cjs"], consumer)).trim()).toBe("ok");
  });

  it.each(["esm.mjs", "cjs.cjs"])("%s decides with core, hono, redis and client; worker resolves with its types", async (file) => {
    const result = JSON.parse(await node([file], consumer)) as Record<string, unknown>;
    expect(result).toMatchObject({
      coreAllowed: [true, false],
      honoStatuses: [200, 429],
      nodeStatuses: [200, 429],
      redisAllowed: [true, false],
      throttled: ["admitted", "MaxWaitExceededError"],
    });
    const workerPath = String(result.workerPath);
    expect(workerPath).toMatch(/node_modules\/spillway\/dist\/worker\/index\.js$/);
    expect(existsSync(fileURLToPath(new URL(workerPath, "file:///")).replace(/\.js$/, ".d.ts"))).toBe(true);
  });

  it.each([
    ["nodenext", "nodenext"],
    ["bundler", "esnext"],
  ])("type-checks a strict consumer with only @types/node under moduleResolution %s", async (moduleResolution, module) => {
    const dir = join(consumer, `types-${moduleResolution}`);
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, "consumer.ts"), consumerSource());
    writeFileSync(
      join(dir, "tsconfig.json"),
      JSON.stringify({
        compilerOptions: { strict: true, noEmit: true, skipLibCheck: false, module, moduleResolution, target: "es2023", lib: ["es2023", "dom"], types: ["node"] },
        files: ["consumer.ts"],
      }),
    );
    await node([join(root, "node_modules", "typescript", "bin", "tsc"), "-p", join(dir, "tsconfig.json")], consumer);
  }, 180_000);

  it("`spillway serve --store memory` answers /v1/check, and stops on SIGTERM", async () => {
    writeFileSync(join(consumer, "spillway.config.json"), JSON.stringify({ policies: [{ name: "demo", limit: 1, period: "1m" }] }));
    const server = spawn(process.execPath, [join(consumer, "node_modules", ".bin", "spillway"), "serve", "--config", "spillway.config.json", "--store", "memory", "--port", "0"], {
      cwd: consumer,
      env: { ...process.env, SPILLWAY_TOKEN: "package-test" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    try {
      const url = await listeningUrl(server);
      const check = () =>
        fetch(`${url}/v1/check`, { method: "POST", headers: { authorization: "Bearer package-test", "content-type": "application/json" }, body: JSON.stringify({ key: "alice", policy: "demo" }) });
      expect((await check()).status).toBe(200);
      expect((await check()).status).toBe(429);
    } finally {
      server.kill("SIGTERM");
    }
    const exited = server.exitCode !== null || server.signalCode !== null;
    const code = exited ? server.exitCode : await new Promise<number | null>((resolve) => server.once("exit", (exitCode) => resolve(exitCode)));
    expect(code).toBe(0);
  });

  // npm runs a command through a shell, and passes a SIGTERM to that shell only: the server
  // must stop anyway (it notices that its parent went away), not live on as an orphan.
  it.each([
    ["npx spillway serve", "npx", ["spillway", "serve"]],
    ["npm run serve", "npm", ["run", "serve", "--"]],
  ])("SIGTERM to `%s` stops the server", async (_how, command, args) => {
    const manifest = JSON.parse(readFileSync(join(consumer, "package.json"), "utf8")) as Record<string, unknown>;
    writeFileSync(join(consumer, "package.json"), JSON.stringify({ ...manifest, scripts: { serve: "spillway serve" } }));
    writeFileSync(join(consumer, "spillway.config.json"), JSON.stringify({ policies: [{ name: "demo", limit: 1, period: "1m" }] }));
    const npm = spawn(command, [...args, "--config", "spillway.config.json", "--store", "memory", "--port", "0"], {
      cwd: consumer,
      env: { ...process.env, SPILLWAY_TOKEN: "package-test" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    const url = await listeningUrl(npm);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    npm.kill("SIGTERM");
    let answering = true;
    for (let tries = 0; tries < 100 && answering; tries++) {
      answering = await fetch(`${url}/healthz`).then(() => true, () => false);
      if (answering) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(answering, `${url} still answers 10 s after SIGTERM`).toBe(false);
  }, 60_000);
});

/** The URL `spillway serve` prints once listening; its output is kept for the failure message. */
function listeningUrl(server: ChildProcess): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = "";
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const url = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (url) resolve(url);
    };
    server.stdout!.on("data", read);
    server.stderr!.on("data", read);
    server.once("exit", (code) => reject(new Error(`spillway serve exited (${code}) before listening:\n${output}`)));
  });
}

/** A consumer that touches the public types of every Node entry point. */
function consumerSource(): string {
  return `${nodeEntries.map((entry, index) => `import * as entry${index} from ${JSON.stringify(entry)};`).join("\n")}
import { Hono } from "hono";
import { KeyState, parsePolicy, type Decision, type Policy } from "spillway/core";
import { MemoryStore, rateLimit, type Limiter } from "spillway/hono";
import { RedisStore, type RedisStoreOptions } from "spillway/redis";
import { createThrottle, httpLimiter, throttledFetch, createSemaphore } from "spillway/client";
import { rateLimit as nodeRateLimit, type NodeMiddleware } from "spillway/node";
import { createServer } from "node:http";

export const entries = [${nodeEntries.map((_, index) => `entry${index}`).join(", ")}];
const policy: Policy = parsePolicy({ name: "per-second", limit: 5, period: "1s" }, "policy");
const decision: Decision = new KeyState().check([policy], Date.now(), { cost: 1, mode: "reject", maxWaitMs: 0 }).decision;
const app = new Hono();
const store: Limiter = new MemoryStore();
app.use("/api/*", rateLimit({ store, policies: [{ name: "per-minute", limit: 60, period: "1m" }], key: (c) => c.req.header("x-api-key") }));
const options: RedisStoreOptions = { url: "redis://127.0.0.1:6379", timeoutMs: 50 };
export const redis: Limiter = new RedisStore(options);
const throttle = createThrottle({ limiter: httpLimiter({ url: "http://127.0.0.1:8787", token: "t" }), key: "api", policy: "upstream" });
export const fetchApi: (input: string) => Promise<Response> = throttledFetch({ throttle });
export const semaphore = createSemaphore({ limiter: store, key: "uploads", policy: { name: "uploads", algorithm: "concurrency", limit: 4 } });
export const allowed: boolean = decision.allowed;
const limitNode: NodeMiddleware = nodeRateLimit({ store, policies: { name: "per-ip", limit: 100, period: "1m" }, key: (req) => req.socket.remoteAddress });
export const server = createServer((req, res) => void limitNode(req, res, () => res.end("ok")));
`;
}
