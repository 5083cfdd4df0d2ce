import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import { ALGORITHMS, type AlgorithmName } from "../core/types.js";

/** A standalone ioredis client or a Cluster: both route EVALSHA by the first key. */
export type RedisClient = Redis | Cluster;

export const SCRIPT_NAMES = ["check", "acquire", "leave", "release", "extend", "reset"] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** Each algorithm of SPEC §1 lives in its own file and mirrors its `src/core` twin. */
const ALGORITHM_FILES: Record<AlgorithmName, string> = {
  gcra: "gcra.lua",
  "token-bucket": "token-bucket.lua",
  "fixed-window": "fixed-window.lua",
  "sliding-window": "sliding-window.lua",
  "sliding-log": "sliding-log.lua",
  concurrency: "concurrency.lua",
};

/** Which library parts an entry script needs besides common, its algorithms and context. */
const ENTRY_NEEDS: Record<ScriptName, { decide: boolean; waiters: "always" | "with-concurrency" | "never" }> = {
  check: { decide: true, waiters: "with-concurrency" },
  acquire: { decide: true, waiters: "always" },
  leave: { decide: false, waiters: "always" },
  release: { decide: false, waiters: "always" },
  extend: { decide: false, waiters: "never" },
  reset: { decide: false, waiters: "always" },
};

export interface RedisScript {
  name: ScriptName;
  /** The algorithms the script holds, in SPEC order. */
  algorithms: readonly AlgorithmName[];
  /** The full text sent with EVAL (library parts + entry file). */
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

/** The library files of one entry script, in load order. */
export function scriptFiles(name: ScriptName, algorithms: ReadonlySet<AlgorithmName>): string[] {
  const needs = ENTRY_NEEDS[name];
  const held = ALGORITHMS.filter((algorithm) => algorithms.has(algorithm));
  const files = ["common.lua"];
  if (algorithms.has("sliding-log") || algorithms.has("concurrency")) files.push("entries.lua");
  files.push(...held.map((algorithm) => ALGORITHM_FILES[algorithm]), "context.lua");
  if (needs.waiters === "always" || (needs.waiters === "with-concurrency" && algorithms.has("concurrency"))) files.push("waiters.lua");
  if (needs.decide) files.push("decide.lua");
  return files;
}

/**
 * Composes one entry script from the library, holding only the algorithms a stack uses:
 * EVALSHA runs the whole script on every call, so every function defined costs Redis time
 * on every decision. A whole stack is still decided in one atomic EVALSHA.
 */
function compose(name: ScriptName, algorithms: ReadonlySet<AlgorithmName>): RedisScript {
  const held = ALGORITHMS.filter((algorithm) => algorithms.has(algorithm));
  const parts = scriptFiles(name, algorithms).map((file) => `-- >>> ${file}\n${readLua(file)}`);
  const text = `-- spillway ${name} (${held.join(", ")}): composed from src/stores/lua (see ${name}.lua for KEYS and ARGV)\n${parts.join("\n")}\n-- >>> ${name}.lua\n${readLua(`${name}.lua`)}`;
  return { name, algorithms: held, text, sha: sha1(text) };
}

/** Composed scripts by name, then by bit set of algorithms (bit i: ALGORITHMS[i]). */
const composed = new Map<ScriptName, RedisScript[]>();
const ALGORITHM_BITS = new Map<AlgorithmName, number>(ALGORITHMS.map((algorithm, index) => [algorithm, 1 << index]));

/**
 * The `name` script for a stack of these algorithms, composed once and then cached (at most
 * 63 algorithm sets per script). Cheap enough to call on every decision.
 *
 * @example scriptFor("check", ["gcra"]).sha
 */
export function scriptFor(name: ScriptName, algorithms: Iterable<AlgorithmName>): RedisScript {
  let bits = 0;
  for (const algorithm of algorithms) bits |= ALGORITHM_BITS.get(algorithm) ?? 0;
  let byBits = composed.get(name);
  if (!byBits) composed.set(name, (byBits = []));
  let script = byBits[bits];
  if (!script) byBits[bits] = script = compose(name, new Set(ALGORITHMS.filter((algorithm) => (bits & ALGORITHM_BITS.get(algorithm)!) !== 0)));
  return script;
}

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
