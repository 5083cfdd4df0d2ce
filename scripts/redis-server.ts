// The one redis-server launcher, for the Redis tests (test/redis, test/conformance,
// test/package) and the benchmarks (scripts/bench): throwaway servers on free loopback ports,
// no persistence, each a child of this process and so stopped by its pid, never by name.
import { Cluster, Redis } from "ioredis";
import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { REDIS_CLIENT_OPTIONS } from "../src/redis.js";
import { freePort } from "./free-port.js";
import { redisCommand } from "./redis-command.js";

export interface RedisServer {
  port: number;
  url: string;
  process: ChildProcess;
  /** The server's `redis_version`, for a benchmark's report. */
  version(): Promise<string>;
  /** SIGKILL (a crash) and wait for the exit. */
  kill(): Promise<void>;
  /** Starts again on the same port (empty: no persistence). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

function cli(port: number, ...args: string[]): Promise<string> {
  return redisCommand(port, args);
}

async function waitForPing(port: number, child: ChildProcess): Promise<void> {
  for (let attempt = 0; attempt < 200; attempt++) {
    if (child.exitCode !== null) throw new Error(`redis-server on port ${port} exited with ${child.exitCode}`);
    try {
      if ((await cli(port, "ping")) === "PONG") return;
    } catch {
      // not listening yet
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  throw new Error(`redis-server on port ${port} did not answer PING`);
}

function exited(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => child.once("exit", () => resolve()));
}

// Servers still running when this process exits (a crashed benchmark or test worker) are
// killed with it: one exit hook for all of them, not one listener per server.
const running = new Set<ChildProcess>();
process.once("exit", () => {
  for (const child of running) child.kill("SIGKILL");
});

function track(child: ChildProcess): ChildProcess {
  running.add(child);
  child.once("exit", () => running.delete(child));
  return child;
}

/**
 * Starts `redis-server` on a free loopback port (or `port`), without persistence, as a
 * child of this process.
 */
export async function startRedis(extraArgs: string[] = [], port?: number): Promise<RedisServer> {
  const chosenPort = port ?? (await freePort(extraArgs.includes("--cluster-enabled")));
  const dir = mkdtempSync(join(tmpdir(), "spillway-redis-"));
  const launch = async () => {
    const logs = process.env.SPILLWAY_REDIS_LOGS ? ["--loglevel", "verbose", "--logfile", join(process.env.SPILLWAY_REDIS_LOGS, `redis-${chosenPort}.log`)] : [];
    const child = spawn("redis-server", ["--port", String(chosenPort), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, ...logs, ...extraArgs], {
      stdio: "ignore",
    });
    // Without a listener a missing binary (ENOENT) would be an uncaught 'error' event.
    const spawnFailed = new Promise<never>((_, reject) => child.once("error", (error) => reject(new Error(`redis-server could not be started: ${error.message}`))));
    await Promise.race([waitForPing(chosenPort, track(child)), spawnFailed]);
    return child;
  };
  const server: RedisServer = {
    port: chosenPort,
    url: `redis://127.0.0.1:${chosenPort}`,
    process: await launch().catch((error: unknown) => {
      rmSync(dir, { recursive: true, force: true });
      throw error;
    }),
    async version() {
      return /redis_version:(\S+)/.exec(await cli(chosenPort, "info", "server"))?.[1] ?? "unknown";
    },
    async kill() {
      server.process.kill("SIGKILL");
      await exited(server.process);
    },
    async restart() {
      server.process = await launch();
    },
    async stop() {
      server.process.kill("SIGTERM");
      const timer = setTimeout(() => server.process.kill("SIGKILL"), 2000);
      await exited(server.process);
      clearTimeout(timer);
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

/**
 * What `redis-cli --cluster create … --cluster-replicas 0` does (the same slot ranges, a config
 * epoch of its own for each master, every node met), without its one-second polls and a
 * redis-cli process: the caller waits for cluster_state:ok on every node.
 */
async function joinCluster(ports: number[]): Promise<void> {
  const perNode = 16384 / ports.length;
  let first = 0;
  const ranges = ports.map((_, i) => {
    const last = i === ports.length - 1 ? 16383 : Math.max(first, Math.round(i * perNode + perNode - 1));
    const range = [first, last];
    first = last + 1;
    return range;
  });
  await Promise.all(
    ports.map(async (port, i) => {
      for (const reply of [await cli(port, "cluster", "addslotsrange", String(ranges[i]![0]), String(ranges[i]![1])), await cli(port, "cluster", "set-config-epoch", String(i + 1))]) {
        if (reply !== "OK") throw new Error(`redis-server on port ${port} refused to join a cluster: ${reply}`);
      }
    }),
  );
  for (const port of ports.slice(1)) {
    const reply = await cli(ports[0]!, "cluster", "meet", "127.0.0.1", String(port));
    if (reply !== "OK") throw new Error(`redis-server on port ${ports[0]} could not meet port ${port}: ${reply}`);
  }
}

export interface RedisClusterServers {
  nodes: RedisServer[];
  /** Startup nodes for ioredis: [{ host, port }]. */
  startupNodes: { host: string; port: number }[];
  stop(): Promise<void>;
}

/**
 * Starts `masters` cluster-enabled servers and joins them into a cluster (no replicas).
 * `nodeTimeoutMs`: cluster-node-timeout (default 2000), after which a silent master is failing.
 */
export async function startRedisCluster(masters = 3, nodeTimeoutMs = 2000): Promise<RedisClusterServers> {
  const nodes: RedisServer[] = [];
  try {
    // Started side by side; each started one is kept, to be stopped if another fails.
    const starting = await Promise.allSettled(
      Array.from({ length: masters }, (_, i) => startRedis(["--cluster-enabled", "yes", "--cluster-config-file", `nodes-${i}.conf`, "--cluster-node-timeout", String(nodeTimeoutMs)])),
    );
    for (const result of starting) if (result.status === "fulfilled") nodes.push(result.value);
    const failed = starting.find((result) => result.status === "rejected");
    if (failed) throw failed.reason;
    await joinCluster(nodes.map((node) => node.port));
    for (let attempt = 0; ; attempt++) {
      const states = await Promise.all(nodes.map((node) => cli(node.port, "cluster", "info")));
      if (states.every((info) => info.includes("cluster_state:ok") && info.includes(`cluster_known_nodes:${masters}`))) break;
      if (attempt > 200) throw new Error("cluster did not reach cluster_state:ok");
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  } catch (error) {
    await Promise.all(nodes.map((node) => node.stop()));
    throw error;
  }
  return {
    nodes,
    startupNodes: nodes.map((node) => ({ host: "127.0.0.1", port: node.port })),
    stop: async () => {
      await Promise.all(nodes.map((node) => node.stop()));
    },
  };
}

/**
 * A fresh redis-server and a client connected to it with the store's advised options:
 * the set-up most Redis suites share. Stop both with `disconnectRedis`.
 */
export async function connectRedis(): Promise<{ server: RedisServer; client: Redis }> {
  const server = await startRedis();
  const client = new Redis(server.url, REDIS_CLIENT_OPTIONS);
  await new Promise((resolve) => client.once("ready", resolve));
  return { server, client };
}

/** A Cluster of `masters` fresh masters on free ports, and a connected ioredis Cluster client. */
export async function connectRedisCluster(masters = 3): Promise<{ servers: RedisClusterServers; cluster: Cluster }> {
  const servers = await startRedisCluster(masters);
  const cluster = new Cluster(servers.startupNodes, { enableOfflineQueue: false, redisOptions: REDIS_CLIENT_OPTIONS });
  await new Promise((resolve) => cluster.once("ready", resolve));
  return { servers, cluster };
}

export async function disconnectRedis(server: { stop(): Promise<void> } | undefined, client: { disconnect(): void } | undefined): Promise<void> {
  client?.disconnect();
  await server?.stop();
}

export interface BenchRedis {
  url: string;
  /** What the run used, for the report ("a fresh redis-server 7.0.15 on loopback (no persistence)"). */
  description: string;
  /** The server's pid when the run started it (its CPU can be read); undefined for REDIS_URL's. */
  pid?: number;
  stop(): Promise<void>;
}

/** Resolves once the server at `url` answers (or throws after `timeoutMs`); answers its version. */
async function waitForUrl(url: string, timeoutMs: number): Promise<string> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    client.on("error", () => {});
    try {
      await client.connect();
      return /redis_version:(\S+)/.exec(await client.info("server"))?.[1] ?? "unknown";
    } catch (error) {
      if (Date.now() >= deadline) throw new Error(`redis at ${url} did not answer within ${timeoutMs} ms: ${(error as Error).message}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    } finally {
      client.disconnect();
    }
  }
}

/**
 * The Redis of one benchmark run: a fresh server, or the one REDIS_URL names (a shared
 * server is disturbed by other work, so its numbers are noisier).
 */
export async function startBenchRedis(): Promise<BenchRedis> {
  const existing = process.env.REDIS_URL;
  if (existing) {
    const version = await waitForUrl(existing, 5000);
    return { url: existing, description: `redis-server ${version} at REDIS_URL (shared)`, stop: async () => {} };
  }
  const server = await startRedis();
  return { url: server.url, description: `a fresh redis-server ${await server.version()} on loopback (no persistence)`, pid: server.process.pid, stop: () => server.stop() };
}
