import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { availableParallelism, tmpdir } from "node:os";
import { join } from "node:path";
import { configDefaults, defineConfig } from "vitest/config";

// The Redis files whose assertions are about time: store deadlines of 50 to 1000 ms met or
// missed on purpose (or a default 50 ms one that must be met), a Redis paused (CLIENT PAUSE,
// SIGSTOP) or killed, failovers timed against a few seconds, bursts that must not be shed,
// keys that must expire at their moment, rates per second, sleeps that time windows and leases,
// `--workers` processes that must all be up in time. They run one at a time after every other
// project (the redis-timed project): a file beside them makes a 2-core machine miss such
// deadlines (each of these failed so, two files at a time on a machine loaded by other work).
// With them, the files that start several `spillway` processes at once (describe.concurrent):
// they keep both cores busy alone, and beside another file missed their 30 s.
// Every other Redis file runs in the redis project, two at a time beside the unit files: their
// time is mostly spent waiting on processes they start. A new Redis test that times anything
// belongs in this list.
const REDIS_TIMED = [
  "block-expiry",
  "burst",
  "burst-store",
  "calendar-credits",
  "cli-startup-mistakes",
  "client-semaphore",
  "client-throttle",
  "cluster",
  "credits-deadline",
  "data-loss",
  "data-loss-cluster",
  "differential",
  "expiry",
  "failover-cluster",
  "failover-sentinel",
  "faults",
  "first-request",
  "health",
  "leases",
  "local-cache-processes",
  "notify",
  "overrides-log",
  "redis-timeout-cli",
  "replication-guard",
  "rls",
  "rls-env-store",
  "scripts",
  "sentinel-startup",
  "shared-client",
  "workers",
  "workers-readiness",
  "workers-replaced",
].map((name) => `test/redis/${name}.test.ts`);
const REDIS_FILES = ["test/redis/**/*.test.ts", "test/conformance/redis*.test.ts"];

// Node's compile cache for every process the tests start (they inherit it): the `spillway`
// processes that the CLI, serve and Redis tests spawn by the hundred each compiled the same
// few hundred source files again, about a second of CPU apiece on a loaded 2-core machine; from
// the cache, about a third less. Only code is cached (keyed by Node version and file contents).
process.env.NODE_COMPILE_CACHE ??= join(tmpdir(), "spillway-test-compile-cache");

// Five projects, one `npm test`: pure code in Node, Worker code inside workerd, Redis code
// against real redis-server processes (two projects: the timed files apart), and the packed
// tarball installed as users install it.
export default defineConfig({
  test: {
    projects: [
      {
        // 30 s as in the other projects: a few unit files send thousands of requests, which a
        // loaded 2-core machine stretches well past vitest's 5 s default. Two files at a time
        // (vitest's default on 2 cores is one): a file uses about 0.8 of a core, so two keep both
        // busy; 119 -> 71 s on 2 cores, and every file passed with a busy loop on one core beside it.
        // Files share their worker's modules (isolate: false): each file imported the same few
        // hundred source modules again, a third of the project's CPU. A unit test that needs
        // a module's own state fresh takes it with vi.resetModules() and a dynamic import.
        test: { name: "unit", include: ["test/unit/**/*.test.ts", "test/conformance/core.test.ts"], environment: "node", testTimeout: 30_000, maxWorkers: 2, isolate: false },
      },
      {
        // Not workerd's --verbose (the plugin's default): with it, workerd logs the stack of every
        // JS promise it awaits that rejects (IoContext::awaitJs), so each RPC call a test makes
        // fail on purpose printed "uncaught exception; source = Uncaught (in promise)" though the
        // caller got the error. No Worker code can reject an RPC call without that line.
        // SPILLWAY_WORKERD_VERBOSE=1 turns it back on to see a stack while debugging.
        plugins: [cloudflareTest({ verbose: process.env.SPILLWAY_WORKERD_VERBOSE === "1", wrangler: { configPath: "./wrangler.test.toml" } })],
        // workerd's first test in a file pays for starting the runtime: allow for it.
        // globalSetup runs in Node: the gateway table's WebSocket origin (workerd cannot listen on a port).
        test: {
          name: "worker",
          include: ["test/worker/**/*.test.ts", "test/conformance/durable-object.test.ts"],
          globalSetup: ["test/worker/ws-origin-setup.ts", "test/worker/webhook-setup.ts"],
          testTimeout: 30_000,
          // At least two files at a time, in a group of their own (projects in one group share one
          // maxWorkers): each file's first test waits about a second for workerd to start and load
          // its modules, and vitest's default (one fewer than the cores) is one file at a time on 2
          // cores: 113 -> 49 s there.
          sequence: { groupOrder: 2 },
          maxWorkers: Math.max(2, availableParallelism() - 1),
        },
      },
      {
        test: {
          name: "redis",
          include: REDIS_FILES,
          exclude: [...configDefaults.exclude, ...REDIS_TIMED],
          environment: "node",
          // Each file starts its own redis-server processes on free ports. Two files at a time, in
          // the unit project's group (the same maxWorkers, so one pool for both): most of a Redis
          // file's time is spent waiting (servers and child processes starting, Redis answering),
          // and one file at a time left a core idle. Their stores' timeouts (often the default
          // 50 ms) are met beside another file: they were, one file at a time on a machine at a
          // load average of 18.
          maxWorkers: 2,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "redis-timed",
          include: REDIS_TIMED,
          environment: "node",
          // REDIS_TIMED above: one file at a time, after every other project (vitest puts a
          // project without file parallelism in a group of its own, last).
          fileParallelism: false,
          testTimeout: 30_000,
          hookTimeout: 60_000,
        },
      },
      {
        test: {
          name: "package",
          // npm pack (which builds dist/), npm install of the tarball into an empty project, then
          // that project's Node, tsc and spillway command: minutes, not seconds, on a cold cache.
          include: ["test/package/**/*.test.ts"],
          environment: "node",
          // One `npm pack` for every file (test/package/pack.global.ts): files read it with inject("tarball").
          globalSetup: ["test/package/pack.global.ts"],
          // A group of its own, not beside the other projects: its tsc and npm runs take the CPU
          // that the Redis fault tests' deadlines (50 ms) are measured against. (The redis project,
          // one file at a time, runs in a group of its own after this one.)
          sequence: { groupOrder: 1 },
          // Each file installs and runs whole projects: two at a time, and no more, whatever the
          // machine (vitest's default is one fewer than its cores: one, on 2 cores). An install
          // waits on the disk and npm's cache as much as on the CPU: two side by side keep both of
          // a 2-core machine's cores busy, where one file left one idle for most of its minute.
          maxWorkers: 2,
          testTimeout: 60_000,
          hookTimeout: 300_000,
        },
      },
    ],
  },
});
