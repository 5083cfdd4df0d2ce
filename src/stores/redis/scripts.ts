import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import type { Cluster, Redis } from "ioredis";
import { ALGORITHMS, type AlgorithmName } from "../../core/types.js";

/** A standalone ioredis client or a Cluster: both route FCALL and EVALSHA by the first key. */
export type RedisClient = Redis | Cluster;

export const SCRIPT_NAMES = ["single", "stack", "check", "debit", "acquire", "leave", "release", "extend", "reset", "balance"] as const;
export type ScriptName = (typeof SCRIPT_NAMES)[number];

/** Each algorithm (README "Algorithms") lives in its own file and mirrors its `src/core` twin. */
const ALGORITHM_FILES: Record<AlgorithmName, string> = {
  gcra: "gcra.lua",
  "token-bucket": "token-bucket.lua",
  "fixed-window": "fixed-window.lua",
  "sliding-window": "sliding-window.lua",
  "sliding-log": "sliding-log.lua",
  concurrency: "concurrency.lua",
  credits: "credits.lua",
};

/** Which library parts an entry script needs besides common, its algorithms and context. */
const ENTRY_NEEDS: Record<ScriptName, { decide: boolean; waiters: "always" | "with-concurrency" | "never" }> = {
  single: { decide: true, waiters: "never" },
  stack: { decide: false, waiters: "never" },
  check: { decide: true, waiters: "with-concurrency" },
  debit: { decide: true, waiters: "never" },
  acquire: { decide: true, waiters: "always" },
  leave: { decide: false, waiters: "always" },
  release: { decide: false, waiters: "always" },
  extend: { decide: false, waiters: "never" },
  reset: { decide: false, waiters: "always" },
  balance: { decide: false, waiters: "never" },
};

export interface RedisScript {
  name: ScriptName;
  /** The algorithms the script holds, in ALGORITHMS order. */
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
 * Composes one entry script for EVALSHA (where Redis Functions are unavailable: Redis < 7,
 * an ACL, a managed service), holding only the algorithms a stack uses: EVALSHA runs the
 * whole script on every call, so every function defined costs Redis time on every
 * decision. A whole stack is still decided in one atomic EVALSHA.
 */
function compose(name: ScriptName, algorithms: ReadonlySet<AlgorithmName>): RedisScript {
  const held = ALGORITHMS.filter((algorithm) => algorithms.has(algorithm));
  const parts = scriptFiles(name, algorithms).map((file) => `-- >>> ${file}\n${readLua(file)}`);
  const text = `-- spillway ${name} (${held.join(", ")}): composed from src/stores/redis/lua (see ${name}.lua for KEYS and ARGV)\n${parts.join("\n")}\n-- >>> ${name}.lua\n${readLua(`${name}.lua`)}`;
  return { name, algorithms: held, text, sha: sha1(text) };
}

/** Composed scripts by name, then by bit set of algorithms (bit i: ALGORITHMS[i]). */
const composed = new Map<ScriptName, RedisScript[]>();
const ALGORITHM_BITS = new Map<AlgorithmName, number>(ALGORITHMS.map((algorithm, index) => [algorithm, 1 << index]));

/**
 * The `name` script for a stack of these algorithms, composed once and then cached (at most
 * 127 algorithm sets per script). Cheap enough to call on every decision.
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

/** Every entry script as Redis Functions (Redis 7+): one library, loaded once per server. */
export interface FunctionLibrary {
  /** `spillway_<hash of the library>`: versions of Spillway never share a library or a function. */
  name: string;
  /** The text for FUNCTION LOAD. */
  text: string;
  /** The function to FCALL for each entry script. */
  functions: Readonly<Record<ScriptName, string>>;
}

/**
 * Composes the whole library (every algorithm, the waiters, the combiner) and registers each
 * entry script as a function. Unlike an EVALSHA, an FCALL runs only its function: the
 * library is defined once, on the first call after a load (the standard libraries such as
 * `math` are not reachable while a library loads, only while a function runs).
 */
function composeLibrary(): FunctionLibrary {
  const everything = new Set(ALGORITHMS);
  const files = [...new Set(SCRIPT_NAMES.flatMap((name) => scriptFiles(name, everything)))];
  const library = files.map((file) => `-- >>> ${file}\n${readLua(file)}`).join("\n");
  const entries = SCRIPT_NAMES.map((name) => `-- >>> ${name}.lua\n${name} = function()\n${readLua(`${name}.lua`)}\nend,`).join("\n");
  const body = [
    "-- spillway: every entry script as a Redis Function, composed from src/stores/redis/lua (see <entry>.lua for KEYS and ARGV)",
    "local KEYS, ARGV",
    "local entries",
    "local function define()",
    library,
    "return {",
    entries,
    "}",
    "end",
    "local function entry(name)",
    "  return function(keys, args)",
    "    KEYS, ARGV = keys, args",
    "    entries = entries or define()",
    "    return entries[name]()",
    "  end",
    "end",
  ].join("\n");
  const name = `spillway_${sha1(body).slice(0, 12)}`;
  const functions = Object.fromEntries(SCRIPT_NAMES.map((entry) => [entry, `${name}_${entry}`])) as Record<ScriptName, string>;
  const registrations = SCRIPT_NAMES.map((entry) => `redis.register_function("${functions[entry]}", entry("${entry}"))`).join("\n");
  return { name, text: `#!lua name=${name}\n${body}\n${registrations}\n`, functions };
}

export const FUNCTION_LIBRARY: FunctionLibrary = composeLibrary();
