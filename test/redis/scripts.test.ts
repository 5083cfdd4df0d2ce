import { readdirSync } from "node:fs";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { ALGORITHMS, type AlgorithmName } from "../../src/core/types.js";
import { StoreFaultError } from "../../src/core/limiter.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/stores/redis/store.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { runnerFor } from "../../src/stores/redis/run.js";
import { FUNCTION_LIBRARY, SCRIPT_NAMES, readLua, scriptFiles, scriptFor, sha1 } from "../../src/stores/redis/scripts.js";
import { type RedisServer, connectRedis, disconnectRedis, startRedis } from "../../scripts/redis-server.js";

const luaFiles = readdirSync(new URL("../../src/stores/redis/lua/", import.meta.url)).filter((file) => file.endsWith(".lua"));
const policy = parsePolicy({ name: "per-second", algorithm: "gcra", limit: 100, period: "1s" }, "policy");
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
/** Every non-empty set of algorithms a stack can use. */
const ALGORITHM_SETS: AlgorithmName[][] = Array.from({ length: 2 ** ALGORITHMS.length - 1 }, (_, index) => ALGORITHMS.filter((_, bit) => ((index + 1) >> bit) & 1));

describe("Lua scripts and functions", () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    ({ server, client } = await connectRedis());
  });

  afterAll(() => disconnectRedis(server, client));

  it("every .lua file starts with a header comment; entry scripts list KEYS and ARGV", () => {
    for (const file of luaFiles) {
      const text = readLua(file);
      expect(text.startsWith(`-- ${file} — `), file).toBe(true);
    }
    for (const name of SCRIPT_NAMES) {
      const header = readLua(`${name}.lua`).split("\n").filter((line) => line.startsWith("--")).join("\n");
      expect(header, name).toMatch(/ARGV\[1\]/);
      expect(header, name).toMatch(/Returns/);
      // Every script takes a stack of policies, but single.lua its one policy.
      expect(header, name).toMatch(name === "single" ? /KEYS\[1\]/ : /KEYS\[i\]/);
      if (name !== "single") expect(header, name).toMatch(/ARGV\[2\+i\]/);
    }
  });

  it("each EVALSHA script, for every set of algorithms, has the SHA of its text, and the server agrees", async () => {
    for (const name of SCRIPT_NAMES) {
      for (const algorithms of ALGORITHM_SETS) {
        const script = scriptFor(name, algorithms);
        expect(script.sha).toBe(sha1(script.text));
        expect(script.text).toContain(readLua(`${name}.lua`));
        expect(await client.script("LOAD", script.text), `${name} ${algorithms.join(",")}`).toBe(script.sha);
      }
    }
  });

  it("a script holds only what its stack can use", () => {
    expect(scriptFiles("check", new Set(["gcra"]))).toEqual(["common.lua", "gcra.lua", "context.lua", "decide.lua"]);
    expect(scriptFiles("check", new Set(["sliding-window", "concurrency"]))).toEqual(["common.lua", "entries.lua", "sliding-window.lua", "concurrency.lua", "context.lua", "waiters.lua", "decide.lua"]);
    expect(scriptFor("check", ["fixed-window", "gcra", "gcra"])).toBe(scriptFor("check", ["gcra", "fixed-window"]));
    expect(scriptFor("check", ["gcra"]).text.match(/^-- >>> .*$/gm)).toEqual(["common.lua", "gcra.lua", "context.lua", "decide.lua", "check.lua"].map((file) => `-- >>> ${file}`));
    expect(scriptFiles("single", new Set(["sliding-log"]))).toEqual(["common.lua", "entries.lua", "sliding-log.lua", "context.lua", "decide.lua"]);
  });

  it("the function library is named by the hash of its text, and the server loads it", async () => {
    const body = FUNCTION_LIBRARY.text.slice(FUNCTION_LIBRARY.text.indexOf("\n") + 1, FUNCTION_LIBRARY.text.indexOf("\nredis.register_function"));
    expect(FUNCTION_LIBRARY.name).toBe(`spillway_${sha1(body).slice(0, 12)}`);
    for (const name of SCRIPT_NAMES) expect(FUNCTION_LIBRARY.text).toContain(readLua(`${name}.lua`));
    await client.function("FLUSH");
    expect(await client.function("LOAD", FUNCTION_LIBRARY.text)).toBe(FUNCTION_LIBRARY.name);
  });

  /** Runs `calls` and answers the commands the client sent meanwhile. */
  async function commandsOf(redis: Redis, calls: () => Promise<unknown>): Promise<string[]> {
    const sent: string[] = [];
    const original = redis.sendCommand.bind(redis);
    redis.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      sent.push(command.name);
      return (original as (...args: unknown[]) => unknown)(command, ...rest);
    }) as typeof redis.sendCommand;
    try {
      await calls();
    } finally {
      redis.sendCommand = original;
    }
    return sent;
  }

  it("decides in exactly one round trip (one FCALL)", async () => {
    const store = new RedisStore({ client, keyPrefix: "roundtrip:" });
    await store.check("warm", [policy], reject); // loads the library if needed
    const sent = await commandsOf(client, async () => {
      await store.check("user:1", [policy, parsePolicy({ name: "per-hour", algorithm: "sliding-log", limit: 10, period: "1h" }, "policy")], reject);
      await store.peek("user:1", [policy]);
    });
    expect(sent).toEqual(["fcall", "fcall"]);
  });

  // Per minute: a flush may take longer than one 10 ms interval of `policy`.
  const perMinute = parsePolicy({ name: "per-minute", algorithm: "gcra", limit: 100, period: "1m" }, "policy");

  it("loads the library again after FUNCTION FLUSH (or a restart), invisibly", async () => {
    const store = new RedisStore({ client, keyPrefix: "function-flush:" });
    expect((await store.check("k", [perMinute], reject)).allowed).toBe(true);
    await client.function("FLUSH");
    const sent = await commandsOf(client, async () => expect(await store.check("k", [perMinute], reject)).toMatchObject({ allowed: true, remaining: 98 }));
    expect(sent).toEqual(["fcall", "function", "fcall"]);
    expect(await commandsOf(client, () => store.check("k", [perMinute], reject))).toEqual(["fcall"]);
    expect(runnerFor(client).mode).toBe("functions");
  });

  it("without FUNCTION (Redis < 7, or an ACL), uses EVALSHA, and EVAL after SCRIPT FLUSH, invisibly", async () => {
    await client.acl("SETUSER", "no-functions", "on", "nopass", "~*", "&*", "+@all", "-fcall", "-function");
    const limited = new Redis(server.url, { ...REDIS_CLIENT_OPTIONS, username: "no-functions" });
    await new Promise((resolve) => limited.once("ready", resolve));
    try {
      const store = new RedisStore({ client: limited, keyPrefix: "scripts:" });
      expect((await store.check("k", [perMinute], reject)).allowed).toBe(true);
      expect(runnerFor(limited).mode).toBe("scripts");
      expect(await commandsOf(limited, () => store.check("k", [perMinute], reject))).toEqual(["evalsha"]);
      await client.script("FLUSH");
      const sha = scriptFor("single", ["gcra"]).sha;
      expect(await client.script("EXISTS", sha)).toEqual([0]);
      expect(await store.check("k", [perMinute], reject)).toMatchObject({ allowed: true, remaining: 97 });
      expect(await client.script("EXISTS", sha)).toEqual([1]);
    } finally {
      limited.disconnect();
    }
  });

  it("where FCALL does not exist (as before Redis 7), uses EVALSHA from the first call on", async () => {
    const older = await startRedis(["--rename-command", "FCALL", "", "--rename-command", "FUNCTION", ""]);
    const olderClient = new Redis(older.url, REDIS_CLIENT_OPTIONS);
    try {
      await new Promise((resolve) => olderClient.once("ready", resolve));
      const store = new RedisStore({ client: olderClient, keyPrefix: "older:" });
      expect(await store.check("k", [perMinute], reject)).toMatchObject({ allowed: true, remaining: 99 });
      expect(runnerFor(olderClient).mode).toBe("scripts");
      expect(await commandsOf(olderClient, () => store.check("k", [perMinute], reject))).toEqual(["evalsha"]);
      // Two plain limits: stack.lua as a script of its own (one MGET, its lists new each call).
      const hourly = parsePolicy({ name: "hourly", algorithm: "fixed-window", limit: 2, period: "1h" }, "policy");
      const stacked = () => store.check("stacked", [perMinute, hourly], reject);
      // Its first call loads it (EVALSHA answers NOSCRIPT, then EVAL); the next is one EVALSHA.
      expect(await commandsOf(olderClient, stacked)).toEqual(["evalsha", "eval"]);
      let second: unknown;
      expect(await commandsOf(olderClient, async () => (second = await stacked()))).toEqual(["evalsha"]);
      expect(second).toMatchObject({ allowed: true, remaining: 0, policy: "hourly" });
      expect(await stacked()).toMatchObject({ allowed: false, policy: "hourly" });
      expect(await store.peek("stacked", [perMinute])).toMatchObject({ remaining: 98 });
      // Calendar windows and credits (a change, and a stack decided in full) take the same way.
      const monthly = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 2, calendar: "month", timezone: "Asia/Kolkata" }, "policy");
      const wallet = parsePolicy({ name: "wallet", algorithm: "credits", limit: 5, refill: { calendar: "week" } }, "policy");
      expect(await store.credits("k", wallet, { add: 1 })).toEqual({ remaining: 6 });
      expect(await store.check("k", [monthly, wallet], { cost: 2, mode: "reserve", maxWaitMs: 0 })).toMatchObject({ allowed: true, remaining: 0 });
      expect(await store.check("k", [wallet], { cost: 5, mode: "reject", maxWaitMs: 0 })).toMatchObject({ allowed: false, remaining: 4 });
    } finally {
      olderClient.disconnect();
      await older.stop();
    }
  });

  it("a policy redefined with another algorithm starts fresh on its old key, and takes the key over", async () => {
    const store = new RedisStore({ client, keyPrefix: "redefined:", clock: "client", clockMs: () => 1_000_000 });
    const key = keyLayout("redefined:", "k").stateKey(policy.name);
    // A full fixed window of the old definition, and the GCRA policy that now has its name.
    await client.set(key, "f:1000000:100", "PX", 60_000);
    expect(await store.check("k", [policy], reject)).toMatchObject({ allowed: true, remaining: 99 });
    expect(await client.get(key)).toBe("g:1000010");
    // And back: the fixed window reads the GCRA state as none.
    const window = parsePolicy({ name: policy.name, algorithm: "fixed-window", limit: 2, period: "1s" }, "policy");
    expect(await store.check("k", [window], reject)).toMatchObject({ allowed: true, remaining: 1 });
    expect(await client.get(key)).toMatch(/^f:/);
  });

  it("an unreadable state is a StoreFaultError, never an admission", async () => {
    const store = new RedisStore({ client, keyPrefix: "corrupt:" });
    // JSON included: no released Spillway stored its states that way.
    for (const value of ["g:", "g:x", "nonsense", "{broken", JSON.stringify({ algorithm: "gcra", state: { tatMs: 1 } })]) {
      await client.set(keyLayout("corrupt:", "k").stateKey(policy.name), value);
      await expect(store.check("k", [policy], reject), value).rejects.toBeInstanceOf(StoreFaultError);
    }
  });
});
