import type { Cluster, Redis } from "ioredis";
import { ioredis } from "./ioredis.js";
import type { AlgorithmName } from "../../core/types.js";
import { ClusterWriteCoalescer, WriteCoalescer } from "./coalesce.js";
import { isCluster } from "./connection.js";
import { ServerClock } from "./server-clock.js";
import { FUNCTION_LIBRARY, type RedisClient, type RedisScript, type ScriptName, scriptFor } from "./scripts.js";

/**
 * How Spillway runs its Lua on a client: as Redis Functions (FCALL: the library is defined
 * once per server, not on every call), or, where the server has no FUNCTION (Redis < 7) or
 * may not use it (ACL, a managed service), as EVALSHA scripts built for the stack.
 */
export type RunMode = "functions" | "scripts";

const messageOf = (error: unknown) => (error instanceof Error ? error.message : "");
const isFunctionNotFound = (error: unknown) => /^ERR Function not found/i.test(messageOf(error));
/** FCALL or FUNCTION unknown (Redis < 7, renamed away) or refused (ACL): use scripts. */
const isFunctionsUnavailable = (error: unknown) => /^(ERR unknown (command|subcommand)|NOPERM)/i.test(messageOf(error));
const isNoScript = (error: unknown) => messageOf(error).startsWith("NOSCRIPT");

type Args = readonly (string | number)[];

/**
 * Everything Spillway keeps about one ioredis client: how it runs scripts, the library load
 * and script reloads under way, and its write coalescer. It belongs to the client, not to a
 * store: every store on the same client shares it (runnerFor), so the mode learnt by one
 * store, or the one library load after a restart, serves them all.
 */
export class ScriptRunner {
  readonly client: RedisClient;
  readonly isCluster: boolean;
  private modeNow: RunMode = "functions";
  /** The library load in flight: after a restart or FUNCTION FLUSH, one caller loads. */
  private loading: Promise<void> | undefined;
  /** Reloads in flight, per script sha: after a SCRIPT FLUSH, one caller sends the text, the others wait. */
  private readonly reloading = new Map<string, Promise<unknown>>();
  private coalescerOnce: WriteCoalescer | ClusterWriteCoalescer | undefined;
  /** The library load ahead of the first call (prepare), once per client. */
  private prepared: Promise<void> | undefined;
  /** Redis's clock as this process sees it, for the deadlines of calls that must not act late (server-clock.ts). */
  readonly serverClock: ServerClock;
  /** ioredis's Command class, looked up once (a client exists, so ioredis is installed). */
  private readonly Command = ioredis().Command;

  constructor(client: RedisClient) {
    this.client = client;
    this.isCluster = isCluster(client);
    this.serverClock = new ServerClock(client);
  }

  /** Which way the client runs scripts now. */
  get mode(): RunMode {
    return this.modeNow;
  }

  /**
   * The client's write coalescer, made on first use: one per client, however many stores use
   * it, since what it watches (commands in flight, the socket) belongs to the client. A
   * Cluster's coalescer follows its nodes with one pair of listeners for the client's
   * lifetime, not one per store (stores created per request would otherwise pile them up).
   */
  get coalescer(): WriteCoalescer | ClusterWriteCoalescer {
    this.coalescerOnce ??= this.isCluster ? new ClusterWriteCoalescer(this.client as Cluster) : new WriteCoalescer(this.client as Redis);
    return this.coalescerOnce;
  }

  /**
   * Runs entry script `name` for a stack of `algorithms` in one round trip in the steady
   * state: one FCALL of the loaded library, sent as a Command of its own (ioredis flattens
   * keys and args without a spread, and skips its per-call option and auto-pipelining work).
   * When `recoverable`, a failure goes to recover: after a restart or FUNCTION FLUSH it loads
   * the library and calls again; where functions are unavailable it switches the client to
   * EVALSHA for good. A call never fails for want of a function or a script: the last resort
   * is EVAL of the script text.
   */
  send(name: ScriptName, algorithms: Iterable<AlgorithmName>, keys: readonly string[], args: Args): { reply: Promise<unknown>; recoverable: boolean } {
    if (this.modeNow === "scripts") return { reply: this.evalScript(scriptFor(name, algorithms), keys, args), recoverable: false };
    return { reply: this.fcall(FUNCTION_LIBRARY.functions[name], keys, args), recoverable: true };
  }

  /**
   * Loads the library before the client's first call, once: a store's first decision then
   * costs one round trip instead of three (FCALL, FUNCTION LOAD, FCALL), which on a fresh
   * redis-server outlasts a 50 ms call timeout. Never fails: a call recovers as it always does.
   */
  prepare(): Promise<void> {
    if (this.modeNow === "scripts") return Promise.resolve();
    this.prepared ??= this.loadLibrary().then(
      () => undefined,
      () => undefined,
    );
    return this.prepared;
  }

  /** After a failed FCALL: load the library and call again, or switch the client to scripts. */
  async recover(error: unknown, name: ScriptName, algorithms: Iterable<AlgorithmName>, keys: readonly string[], args: Args): Promise<unknown> {
    if (isFunctionsUnavailable(error)) this.modeNow = "scripts";
    else if (!isFunctionNotFound(error)) throw error;
    if (this.modeNow !== "scripts" && (await this.loadLibrary())) {
      try {
        return await this.fcall(FUNCTION_LIBRARY.functions[name], keys, args);
      } catch (error) {
        // Still missing (a Cluster node that joined meanwhile): EVAL below, once.
        if (!isFunctionNotFound(error)) throw error;
      }
    }
    return this.evalScript(scriptFor(name, algorithms), keys, args);
  }

  /**
   * Runs a script in one round trip: EVALSHA, and EVAL only when the server answers
   * NOSCRIPT (after SCRIPT FLUSH, a restart or a failover), which also caches it again.
   * Concurrent callers that meet NOSCRIPT together send the script text once: the first
   * one EVALs, the rest retry EVALSHA once that has loaded it (and EVAL themselves only if
   * their key lives on another Cluster node that still lacks it).
   */
  async evalScript(script: RedisScript, keys: readonly string[], args: Args): Promise<unknown> {
    const client = this.client;
    try {
      return await client.evalsha(script.sha, keys.length, ...keys, ...args);
    } catch (error) {
      if (!isNoScript(error)) throw error;
    }
    const inFlight = this.reloading.get(script.sha);
    if (inFlight) {
      await inFlight.catch(() => {});
      try {
        return await client.evalsha(script.sha, keys.length, ...keys, ...args);
      } catch (error) {
        if (!isNoScript(error)) throw error;
        return await client.eval(script.text, keys.length, ...keys, ...args);
      }
    }
    const evaluation = client.eval(script.text, keys.length, ...keys, ...args);
    this.reloading.set(script.sha, evaluation);
    try {
      return await evaluation;
    } finally {
      this.reloading.delete(script.sha);
    }
  }

  private fcall(functionName: string, keys: readonly string[], args: Args): Promise<unknown> {
    const client = this.client;
    const options = client.options as { keyPrefix?: string; enableAutoPipelining?: boolean };
    // A client that pipelines automatically keeps doing so through its own command method.
    if (options.enableAutoPipelining) return client.fcall(functionName, keys.length, ...keys, ...args);
    // Flat already: Command flattens its arguments (Array.prototype.flat), which walks nested arrays at a cost.
    // Sized once: pushes would grow (copy) it a few times per call.
    const flat: (string | number)[] = new Array(2 + keys.length + args.length);
    flat[0] = functionName;
    flat[1] = keys.length;
    for (let i = 0; i < keys.length; i++) flat[2 + i] = keys[i]!;
    for (let i = 0; i < args.length; i++) flat[2 + keys.length + i] = args[i]!;
    const command = new this.Command("fcall", flat, { replyEncoding: "utf8", keyPrefix: options.keyPrefix });
    return client.sendCommand(command) as Promise<unknown>;
  }

  /** Loads the library (on every master of a Cluster); false when the client switched to scripts. */
  private async loadLibrary(): Promise<boolean> {
    if (!this.loading) {
      const nodes = this.isCluster ? (this.client as Cluster).nodes("master") : [this.client];
      const pending = Promise.all(
        nodes.map(async (node) => {
          try {
            await node.function("LOAD", FUNCTION_LIBRARY.text);
          } catch (error) {
            if (isFunctionsUnavailable(error)) this.modeNow = "scripts";
            // "already exists" is success; a node that is down answers nothing anyway.
          }
        }),
      ).then(() => undefined);
      this.loading = pending;
      pending.finally(() => (this.loading = undefined)).catch(() => {});
    }
    await this.loading;
    return this.modeNow !== "scripts";
  }
}

/** The runner of each client, shared by every store on it. */
const runners = new WeakMap<RedisClient, ScriptRunner>();

/** The one ScriptRunner of a client. */
export function runnerFor(client: RedisClient): ScriptRunner {
  let runner = runners.get(client);
  if (!runner) runners.set(client, (runner = new ScriptRunner(client)));
  return runner;
}
