// A master, its replicas and three Redis Sentinels on free loopback ports, for the failover
// tests: every process a child of this one, stopped by its pid. Sentinel's timings are set to
// fail over within a few seconds (down-after-milliseconds 1000) instead of its 30 s default.
import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { freePort } from "./free-port.js";
import { redisCommand } from "./redis-command.js";
import { type RedisServer, startRedis } from "./redis-server.js";

const run = promisify(execFile);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One command to the server on `port`, answered as `redis-cli` prints it (scripts/redis-command.ts:
 * no redis-cli process). Leading `--no-auth-warning -a PASSWORD` (sentinelAuth) authenticate first.
 */
export function redisCli(port: number, ...args: string[]): Promise<string> {
  return redisCommand(port, withoutAuth(args), { password: passwordOf(args) });
}

function passwordOf(args: string[]): string | undefined {
  const at = args.indexOf("-a");
  return at >= 0 && at < 2 ? args[at + 1] : undefined;
}

function withoutAuth(args: string[]): string[] {
  return passwordOf(args) === undefined ? args : args.slice(args.indexOf("-a") + 2);
}

/** A replication offset from INFO replication: a master's `master_repl_offset`, a replica's `slave_repl_offset`. */
async function replicationOffset(port: number, field: "master_repl_offset" | "slave_repl_offset", password: string | undefined, timeoutMs: number): Promise<number> {
  // A bound on the call too: a stopped server (SIGSTOP) accepts the connection and never answers.
  const info = await redisCommand(port, ["info", "replication"], { password, timeoutMs: Math.max(1, Math.ceil(timeoutMs)) });
  const offset = new RegExp(`^${field}:(\\d+)`, "m").exec(info)?.[1];
  if (offset === undefined) throw new Error(`redis on port ${port} reports no ${field}:\n${info}`);
  return Number(offset);
}

/**
 * Resolves once the replica on `replicaPort` has applied everything the master on `masterPort`
 * had written when this was called (its slave_repl_offset reaches the master's
 * master_repl_offset); throws after `timeoutMs`, naming both offsets. WAIT is no such guard
 * from redis-cli: it waits for the writes of the connection that sends it, and a fresh
 * connection has written nothing, so it answers at once whatever the replica holds.
 */
export async function untilReplicated(masterPort: number, replicaPort: number, { timeoutMs = 5000, password }: { timeoutMs?: number; password?: string } = {}): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const target = await replicationOffset(masterPort, "master_repl_offset", password, timeoutMs);
  for (;;) {
    const applied = await replicationOffset(replicaPort, "slave_repl_offset", password, deadline - performance.now()).catch(() => undefined);
    if (applied !== undefined && applied >= target) return;
    if (performance.now() > deadline) throw new Error(`the replica on port ${replicaPort} applied ${applied ?? "(no answer)"} of the master's ${target} bytes of writes in ${timeoutMs} ms`);
    await sleep(20);
  }
}

/**
 * A write on the master (a key set, then deleted), waited for on every replica: a replica whose
 * link is up may not be streaming yet. After a diskless sync (Redis 7's default) the master
 * starts a replica's stream on its REPLCONF ACK once it has reaped the RDB child; the ACK the
 * replica sends as it finishes loading can arrive before that, and then the stream waits for
 * the replica's next ACK, a second later: writes made meanwhile reach it only then.
 */
export async function untilStreaming(masterPort: number, replicaPorts: number[], probeKey: string, password?: string): Promise<void> {
  await redisCli(masterPort, ...sentinelAuth(password), "set", probeKey, "1");
  await redisCli(masterPort, ...sentinelAuth(password), "del", probeKey);
  for (const port of replicaPorts) await untilReplicated(masterPort, port, { timeoutMs: 10_000, password });
}

export interface SentinelProcess {
  port: number;
  process: ChildProcess;
  stop(): Promise<void>;
}

export interface SentinelGroup {
  /** The master's name as the sentinels know it. */
  name: string;
  master: RedisServer;
  replicas: RedisServer[];
  sentinels: SentinelProcess[];
  /** `[{ host, port }]` of the sentinels, for RedisStore. */
  addresses: { host: string; port: number }[];
  /** The master's port as the first sentinel that answers sees it now. */
  masterPort(): Promise<number>;
  stop(): Promise<void>;
}

export interface SentinelGroupOptions {
  replicas?: number;
  /** Sentinel's down-after-milliseconds (default 1000). */
  downAfterMs?: number;
  /** Passwords: the sentinels' own (requirepass) and the master's and replicas'. */
  sentinelPassword?: string;
  password?: string;
  name?: string;
  /** How many sentinels (default 3, quorum 2; one alone has quorum 1 and cannot fail over safely). */
  sentinelCount?: number;
}

/** The binary: Debian's `redis-sentinel` (package redis-sentinel), else `redis-server --sentinel`. */
function sentinelCommand(): Promise<[string, string[]]> {
  // Looked up once per process, not once per sentinel.
  sentinelBinary ??= run("redis-sentinel", ["--version"]).then(
    (): [string, string[]] => ["redis-sentinel", []],
    (): [string, string[]] => ["redis-server", ["--sentinel"]],
  );
  return sentinelBinary;
}
let sentinelBinary: Promise<[string, string[]]> | undefined;

async function startSentinel(dir: string, index: number, lines: string[], password: string | undefined): Promise<SentinelProcess> {
  const port = await freePort();
  const file = join(dir, `sentinel-${index}.conf`);
  // Sentinel rewrites its file (known replicas and sentinels, the current master): one each.
  writeFileSync(file, [`port ${port}`, "bind 127.0.0.1", `dir ${dir}`, ...lines, ""].join("\n"));
  const [command, extra] = await sentinelCommand();
  const child = spawn(command, [file, ...extra], { stdio: "ignore" });
  child.once("error", () => {});
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) throw new Error(`redis-sentinel on port ${port} exited with ${child.exitCode}`);
    try {
      // With its own password: a sentinel that has one answers a bare PING with NOAUTH, never
      // PONG, and the wait ran its 200 attempts (5 s) for every such sentinel.
      if ((await redisCli(port, ...sentinelAuth(password), "ping")) === "PONG") break;
    } catch {
      // not listening yet
    }
    // A sentinel that never answers PONG is a broken harness, not a slow start: said here,
    // not later as a failover test's confusing timeout.
    if (attempt >= 200) {
      child.kill("SIGKILL");
      throw new Error(`redis-sentinel on port ${port} did not answer PING with PONG in ${attempt} attempts`);
    }
    await sleep(20);
  }
  return {
    port,
    process: child,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGKILL");
      await exited;
    },
  };
}

/**
 * Starts a master, `replicas` replicas of it and three sentinels watching it (quorum 2), and
 * waits until every sentinel knows every replica and the other sentinels: only then can they
 * agree on a failover.
 */
export async function startSentinelGroup(options: SentinelGroupOptions = {}): Promise<SentinelGroup> {
  const name = options.name ?? "mymaster";
  // Diskless sync without its 5 s wait for more replicas: a replica is in sync at once.
  const master = await startRedis(["--repl-diskless-sync-delay", "0"]);
  const replicas: RedisServer[] = [];
  const sentinels: SentinelProcess[] = [];
  const dir = mkdtempSync(join(tmpdir(), "spillway-sentinel-"));
  const stop = async () => {
    await Promise.all(sentinels.map((sentinel) => sentinel.stop()));
    await Promise.all([master, ...replicas].map((server) => server.stop()));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (let i = 0; i < (options.replicas ?? 1); i++) replicas.push(await startRedis(["--repl-diskless-sync-delay", "0", "--replicaof", "127.0.0.1", String(master.port)]));
    // A password is set once they run (the launcher waits for a PING, which AUTH would refuse).
    if (options.password) for (const server of [...replicas, master]) await redisCli(server.port, "config", "set", "masterauth", options.password, "requirepass", options.password);
    await waitForSync(master, replicas, options.password);
    const lines = [
      `sentinel monitor ${name} 127.0.0.1 ${master.port} ${Math.floor((options.sentinelCount ?? 3) / 2) + 1}`,
      `sentinel down-after-milliseconds ${name} ${options.downAfterMs ?? 1000}`,
      // A failover that stalls is retried after this long (Sentinel's default is 3 minutes).
      `sentinel failover-timeout ${name} 5000`,
      `sentinel parallel-syncs ${name} 1`,
      ...(options.password ? [`sentinel auth-pass ${name} ${options.password}`] : []),
      ...(options.sentinelPassword ? [`requirepass ${options.sentinelPassword}`, `sentinel sentinel-pass ${options.sentinelPassword}`] : []),
    ];
    for (let i = 0; i < (options.sentinelCount ?? 3); i++) sentinels.push(await startSentinel(dir, i, lines, options.sentinelPassword));
    await waitForAcquaintance(sentinels, name, replicas.length, options.sentinelPassword);
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    name,
    master,
    replicas,
    sentinels,
    addresses: sentinels.map((sentinel) => ({ host: "127.0.0.1", port: sentinel.port })),
    async masterPort() {
      for (const sentinel of sentinels) {
        if (sentinel.process.exitCode !== null) continue;
        const reply = await redisCli(sentinel.port, ...sentinelAuth(options.sentinelPassword), "sentinel", "get-master-addr-by-name", name).catch(() => "");
        const port = Number(reply.split("\n")[1]);
        if (port > 0) return port;
      }
      throw new Error("no sentinel answered for the master");
    },
    stop,
  };
}

async function waitForSync(master: RedisServer, replicas: RedisServer[], password: string | undefined): Promise<void> {
  for (const replica of replicas) {
    for (let attempt = 0; !(await redisCli(replica.port, ...sentinelAuth(password), "info", "replication")).includes("master_link_status:up"); attempt++) {
      if (attempt > 300) throw new Error(`the replica on port ${replica.port} did not sync within 30 s`);
      await sleep(50);
    }
  }
  if (replicas.length > 0) await untilStreaming(master.port, replicas.map((replica) => replica.port), "spillway-harness:probe", password);
}

function sentinelAuth(password: string | undefined): string[] {
  return password ? ["--no-auth-warning", "-a", password] : [];
}

async function waitForAcquaintance(sentinels: SentinelProcess[], name: string, replicas: number, password: string | undefined): Promise<void> {
  for (let attempt = 0; ; attempt++) {
    const known = await Promise.all(
      sentinels.map(async (sentinel) => {
        const info = await redisCli(sentinel.port, ...sentinelAuth(password), "info", "sentinel").catch(() => "");
        // master0:name=mymaster,status=ok,address=127.0.0.1:6379,slaves=1,sentinels=3
        const line = new RegExp(`name=${name},status=ok,address=[^,]+,slaves=(\\d+),sentinels=(\\d+)`).exec(info);
        return line !== null && Number(line[1]) >= replicas && Number(line[2]) >= sentinels.length;
      }),
    );
    if (known.every(Boolean)) return;
    // Sentinels find each other by a hello message every 2 s; replicas by INFO every 10 s at worst.
    if (attempt > 300) throw new Error("the sentinels did not find each other and the replicas within 30 s");
    await sleep(100);
  }
}
