import { readdirSync } from "node:fs";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/stores/redis.js";
import { SCRIPTS, SCRIPT_NAMES, readLua, sha1 } from "../../src/stores/redis-scripts.js";
import { type RedisServer, startRedis } from "./redis-server.js";

const luaFiles = readdirSync(new URL("../../src/stores/lua/", import.meta.url)).filter((file) => file.endsWith(".lua"));
const policy = parsePolicy({ name: "per-second", algorithm: "gcra", limit: 100, period: "1s" }, "policy");
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

describe("Lua scripts", () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    server = await startRedis();
    client = new Redis(server.url, REDIS_CLIENT_OPTIONS);
    await new Promise((resolve) => client.once("ready", resolve));
  });

  afterAll(async () => {
    client?.disconnect();
    await server?.stop();
  });

  it("every .lua file starts with a header comment; entry scripts list KEYS and ARGV", () => {
    for (const file of luaFiles) {
      const text = readLua(file);
      expect(text.startsWith(`-- ${file} — `), file).toBe(true);
    }
    for (const name of SCRIPT_NAMES) {
      const header = readLua(`${name}.lua`).split("\n").filter((line) => line.startsWith("--")).join("\n");
      expect(header, name).toMatch(/KEYS\[1\]/);
      expect(header, name).toMatch(/ARGV\[1\]/);
      expect(header, name).toMatch(/ARGV\[5\+6N\]|Returns/);
    }
  });

  it("each script's SHA matches its text, and the server agrees", async () => {
    for (const name of SCRIPT_NAMES) {
      const script = SCRIPTS[name];
      expect(script.sha).toBe(sha1(script.text));
      expect(script.text).toContain(readLua(`${name}.lua`));
      expect(await client.script("LOAD", script.text)).toBe(script.sha);
    }
  });

  it("decides in exactly one round trip (one EVALSHA)", async () => {
    const store = new RedisStore({ client, keyPrefix: "roundtrip:" });
    await store.check("warm", [policy], reject); // loads the script if needed
    const sent: string[] = [];
    const original = client.sendCommand.bind(client);
    client.sendCommand = ((command: { name: string }, ...rest: unknown[]) => {
      sent.push(command.name);
      return (original as (...args: unknown[]) => unknown)(command, ...rest);
    }) as typeof client.sendCommand;
    try {
      await store.check("user:1", [policy, parsePolicy({ name: "per-hour", algorithm: "sliding-log", limit: 10, period: "1h" }, "policy")], reject);
      await store.peek("user:1", [policy]);
    } finally {
      client.sendCommand = original;
    }
    expect(sent).toEqual(["evalsha", "evalsha"]);
  });

  it("falls back to EVAL after SCRIPT FLUSH, invisibly", async () => {
    const store = new RedisStore({ client, keyPrefix: "flush:" });
    expect((await store.check("k", [policy], reject)).allowed).toBe(true);
    await client.script("FLUSH");
    expect(await client.script("EXISTS", SCRIPTS.check.sha)).toEqual([0]);
    const decision = await store.check("k", [policy], reject);
    expect(decision).toMatchObject({ allowed: true, remaining: 98 });
    expect(await client.script("EXISTS", SCRIPTS.check.sha)).toEqual([1]);
  });
});
