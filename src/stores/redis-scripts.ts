import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";

/** A standalone ioredis client or a Cluster: both route EVALSHA by the first key. */
export type RedisClient = Redis | Cluster;

/**
 * The library every entry script is composed from, in load order. Each algorithm of
 * SPEC §1 lives in its own file and mirrors its `src/core` twin; `decide.lua` is the
 * combiner. Concatenating them gives one script per operation, so a whole stack is
 * decided in one atomic EVALSHA.
 */
const LIBRARY_FILES = [
  "common.lua",
  "gcra.lua",
  "token-bucket.lua",
  "fixed-window.lua",
  "sliding-window.lua",
  "sliding-log.lua",
  "concurrency.lua",
  "context.lua",
  "waiters.lua",
  "decide.lua",
] as const;

export const SCRIPT_NAMES = ["check", "acquire", "leave", "release", "extend", "reset"] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

export interface RedisScript {
  name: ScriptName;
  /** The full text sent with EVAL (library + entry file). */
  text: string;
  /** SHA-1 of `text`, as Redis computes it for EVALSHA. */
  sha: string;
}

const LUA_DIR = new URL("./lua/", import.meta.url);

/** Reads one `.lua` file shipped next to this module. */
export function readLua(fileName: string): string {
  return readFileSync(new URL(fileName, LUA_DIR), "utf8");
}

export function sha1(text: string): string {
  return createHash("sha1").update(text).digest("hex");
}

function compose(name: ScriptName): RedisScript {
  const parts = LIBRARY_FILES.map((file) => `-- >>> ${file}\n${readLua(file)}`);
  const text = `-- spillway ${name}: composed from src/stores/lua (see ${name}.lua for KEYS and ARGV)\n${parts.join("\n")}\n-- >>> ${name}.lua\n${readLua(`${name}.lua`)}`;
  return { name, text, sha: sha1(text) };
}

export const SCRIPTS: Readonly<Record<ScriptName, RedisScript>> = Object.fromEntries(
  SCRIPT_NAMES.map((name) => [name, compose(name)]),
) as Record<ScriptName, RedisScript>;

function isNoScript(error: unknown): boolean {
  return error instanceof Error && error.message.startsWith("NOSCRIPT");
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
