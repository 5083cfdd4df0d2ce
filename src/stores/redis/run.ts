import { type Cluster, Command } from "ioredis";
import type { AlgorithmName } from "../../core/types.js";
import { FUNCTION_LIBRARY, type RedisClient, type RedisScript, type ScriptName, scriptFor } from "./scripts.js";

/**
 * How Spillway runs its Lua on a client: as Redis Functions (FCALL: the library is defined
 * once per server, not on every call), or, where the server has no FUNCTION (Redis < 7) or
 * may not use it (ACL, a managed service), as EVALSHA scripts built for the stack.
 */
type Mode = "functions" | "scripts";
const modes = new WeakMap<RedisClient, Mode>();

/** Library loads in flight, per client: after a restart or FUNCTION FLUSH, one caller loads. */
const loading = new WeakMap<RedisClient, Promise<void>>();

const messageOf = (error: unknown) => (error instanceof Error ? error.message : "");
const isFunctionNotFound = (error: unknown) => /^ERR Function not found/i.test(messageOf(error));
/** FCALL or FUNCTION unknown (Redis < 7, renamed away) or refused (ACL): use scripts. */
const isFunctionsUnavailable = (error: unknown) => /^(ERR unknown (command|subcommand)|NOPERM)/i.test(messageOf(error));
const isNoScript = (error: unknown) => messageOf(error).startsWith("NOSCRIPT");

function isCluster(client: RedisClient): client is Cluster {
  return "isCluster" in client && client.isCluster === true;
}

/**
 * Runs entry script `name` for a stack of `algorithms` in one round trip in the steady
 * state: one FCALL of the loaded library, sent as a Command of its own (ioredis flattens
 * keys and args without a spread, and skips its per-call option and auto-pipelining work).
 * When `recoverable`, a failure goes to recoverScript: after a restart or FUNCTION FLUSH it
 * loads the library and calls again; where functions are unavailable it switches the client
 * to EVALSHA for good. A call never fails for want of a function or a script: the last
 * resort is EVAL of the script text.
 */
export function sendScript(
  client: RedisClient,
  name: ScriptName,
  algorithms: Iterable<AlgorithmName>,
  keys: readonly string[],
  args: readonly (string | number)[],
): { reply: Promise<unknown>; recoverable: boolean } {
  if (modes.get(client) === "scripts") return { reply: evalScript(client, scriptFor(name, algorithms), keys, args), recoverable: false };
  return { reply: fcall(client, FUNCTION_LIBRARY.functions[name], keys, args), recoverable: true };
}

function fcall(client: RedisClient, functionName: string, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  const options = client.options as { keyPrefix?: string; enableAutoPipelining?: boolean };
  // A client that pipelines automatically keeps doing so through its own command method.
  if (options.enableAutoPipelining) return client.fcall(functionName, keys.length, ...keys, ...args);
  const command = new Command("fcall", [functionName, keys.length, keys as string[], args as (string | number)[]], { replyEncoding: "utf8", keyPrefix: options.keyPrefix });
  return client.sendCommand(command) as Promise<unknown>;
}

/** After a failed FCALL: load the library and call again, or switch the client to scripts. */
export async function recoverScript(
  error: unknown,
  client: RedisClient,
  name: ScriptName,
  algorithms: Iterable<AlgorithmName>,
  keys: readonly string[],
  args: readonly (string | number)[],
): Promise<unknown> {
  if (isFunctionsUnavailable(error)) modes.set(client, "scripts");
  else if (!isFunctionNotFound(error)) throw error;
  if (modes.get(client) !== "scripts" && (await loadLibrary(client))) {
    try {
      return await fcall(client, FUNCTION_LIBRARY.functions[name], keys, args);
    } catch (error) {
      // Still missing (a Cluster node that joined meanwhile): EVAL below, once.
      if (!isFunctionNotFound(error)) throw error;
    }
  }
  return evalScript(client, scriptFor(name, algorithms), keys, args);
}

/** Loads the library (on every master of a Cluster); false when the client switched to scripts. */
async function loadLibrary(client: RedisClient): Promise<boolean> {
  let pending = loading.get(client);
  if (!pending) {
    const nodes = isCluster(client) ? client.nodes("master") : [client];
    pending = Promise.all(
      nodes.map(async (node) => {
        try {
          await node.function("LOAD", FUNCTION_LIBRARY.text);
        } catch (error) {
          if (isFunctionsUnavailable(error)) modes.set(client, "scripts");
          // "already exists" is success; a node that is down answers nothing anyway.
        }
      }),
    ).then(() => undefined);
    loading.set(client, pending);
    pending.finally(() => loading.delete(client)).catch(() => {});
  }
  await pending;
  return modes.get(client) !== "scripts";
}

/** Reloads in flight, per script: after a SCRIPT FLUSH, one caller sends the text, the others wait. */
const reloading = new WeakMap<RedisClient, Map<string, Promise<unknown>>>();

/**
 * Runs a script in one round trip: EVALSHA, and EVAL only when the server answers
 * NOSCRIPT (after SCRIPT FLUSH, a restart or a failover), which also caches it again.
 * Concurrent callers that meet NOSCRIPT together send the script text once: the first
 * one EVALs, the rest retry EVALSHA once that has loaded it (and EVAL themselves only if
 * their key lives on another Cluster node that still lacks it).
 */
export async function evalScript(client: RedisClient, script: RedisScript, keys: readonly string[], args: readonly (string | number)[]): Promise<unknown> {
  try {
    return await client.evalsha(script.sha, keys.length, ...keys, ...args);
  } catch (error) {
    if (!isNoScript(error)) throw error;
  }
  let pending = reloading.get(client);
  if (!pending) reloading.set(client, (pending = new Map()));
  const inFlight = pending.get(script.sha);
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
  pending.set(script.sha, evaluation);
  try {
    return await evaluation;
  } finally {
    pending.delete(script.sha);
  }
}

/** Which way a client runs scripts now (tests and benchmarks). */
export function scriptMode(client: RedisClient): Mode {
  return modes.get(client) ?? "functions";
}
