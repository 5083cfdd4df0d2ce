import { describe, expect, it } from "vitest";
import { ValidationError } from "../../../../src/core/validation.js";
import { parseSentinelList, parseServeArgs } from "../../../../src/node/args/serve.js";
import { RedisStore } from "../../../../src/stores/redis/store.js";

const base = ["--config", "c.json"];
const mistake = (argv: string[], env: Record<string, string> = {}) => {
  try {
    parseServeArgs(argv, env);
    return "accepted";
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.message;
  }
};

describe("--redis-sentinel and its family", () => {
  it("parses flags, and the environment when no flag chooses a store", () => {
    expect(parseServeArgs([...base, "--redis-sentinel", "10.0.0.1:26379, 10.0.0.2:26380,[::1]:26381", "--redis-sentinel-name", "mymaster", "--max-inflight", "64"], {}).store).toEqual({
      kind: "redis-sentinel",
      sentinels: [
        { host: "10.0.0.1", port: 26379 },
        { host: "10.0.0.2", port: 26380 },
        { host: "::1", port: 26381 },
      ],
      name: "mymaster",
      maxInFlight: 64,
    });
    const env = { REDIS_SENTINELS: "s1:26379,s2:26379", REDIS_SENTINEL_NAME: "cache", REDIS_PASSWORD: "m-secret", REDIS_SENTINEL_PASSWORD: "s-secret", REDIS_SENTINEL_TLS: "true" };
    expect(parseServeArgs(base, env).store).toEqual({ kind: "redis-sentinel", sentinels: [{ host: "s1", port: 26379 }, { host: "s2", port: 26379 }], name: "cache", password: "m-secret", sentinelPassword: "s-secret", tls: true });
    // Flags beat the environment; another store flag ignores the Sentinel variables.
    expect(parseServeArgs([...base, "--redis-sentinel-name", "other", "--redis-password", "p", "--redis-sentinel-tls"], env).store).toMatchObject({ name: "other", password: "p", tls: true });
    expect(parseServeArgs([...base, "--store", "memory"], env).store).toEqual({ kind: "memory" });
  });

  it("names the flag of every mistake", () => {
    const name = ["--redis-sentinel-name", "mymaster"];
    expect(mistake([...base, "--redis-sentinel", "", ...name])).toMatch(/^--redis-sentinel: must list at least one sentinel/);
    expect(mistake([...base, "--redis-sentinel", " , ", ...name])).toMatch(/^--redis-sentinel: must list at least one sentinel/);
    expect(mistake([...base, "--redis-sentinel", "10.0.0.1", ...name])).toBe('--redis-sentinel: "10.0.0.1" has no port: write HOST:PORT (Sentinel\'s usual port is 26379: 10.0.0.1:26379)');
    expect(mistake([...base, "--redis-sentinel", "a:26379,b:http", ...name])).toMatch(/^--redis-sentinel: "b:http": the port must be an integer from 1 to 65535/);
    expect(mistake([...base, "--redis-sentinel", "a:0", ...name])).toMatch(/^--redis-sentinel: "a:0": the port/);
    expect(mistake([...base, "--redis-sentinel", "a:26379,a:26379", ...name])).toMatch(/^--redis-sentinel: "a:26379" is listed twice/);
    expect(mistake([...base, "--redis-sentinel", "a:26379"])).toMatch(/^--redis-sentinel-name: is required with --redis-sentinel/);
    expect(mistake([...base, "--redis-sentinel", "a:26379", "--redis-sentinel-name", "two words"])).toMatch(/^--redis-sentinel-name: must be one word/);
    expect(mistake([...base, "--redis", "redis://x", "--redis-sentinel", "a:26379", ...name])).toMatch(/^--store: choose one of/);
    expect(mistake([...base, "--redis", "redis://x", ...name])).toMatch(/^--redis-sentinel-name: applies only with --redis-sentinel/);
    expect(mistake([...base, "--store", "memory", "--redis-sentinel-tls"])).toMatch(/^--redis-sentinel-tls: applies only/);
    expect(mistake(base, { REDIS_URL: "redis://x", REDIS_SENTINELS: "a:26379", REDIS_SENTINEL_NAME: "m" })).toMatch(/^REDIS_SENTINELS: and REDIS_URL are both set/);
    expect(mistake(base, { REDIS_SENTINELS: "a", REDIS_SENTINEL_NAME: "m" })).toMatch(/^REDIS_SENTINELS: "a" has no port/);
    expect(mistake(base, { REDIS_SENTINELS: "a:1", REDIS_SENTINEL_NAME: "m", REDIS_SENTINEL_TLS: "maybe" })).toMatch(/^REDIS_SENTINEL_TLS: must be true or false/);
    expect(mistake([...base, "--redis-sentinel", "a:1", ...name, "--redis-password", ""])).toMatch(/^--redis-password: is empty/);
  });

  it("parseSentinelList is the one parser, reusable with any field name", () => {
    expect(parseSentinelList("[fe80::1]:26379", "REDIS_URL")).toEqual([{ host: "fe80::1", port: 26379 }]);
    expect(() => parseSentinelList("::1", "REDIS_URL")).toThrow(ValidationError);
    expect(() => parseSentinelList("::1", "REDIS_URL")).toThrow(/^REDIS_URL: "::1" has no port: write HOST:PORT .*\[::1\]:26379/);
    expect(() => parseSentinelList(":26379", "X")).toThrow(/^X: ":26379" has no port/);
  });
});

describe("RedisStore: the sentinels option", () => {
  const sentinels = [{ host: "127.0.0.1", port: 26379 }];
  it.each([
    [{}, "RedisStore needs one of client, url, clusterNodes or sentinels"],
    [{ url: "redis://x", sentinels, name: "m" }, "RedisStore: sentinels cannot be given with url"],
    [{ url: "redis://x", clusterNodes: ["redis://y"] }, "RedisStore: clusterNodes cannot be given with url"],
    [{ url: "redis://x", password: "p" }, "RedisStore: password applies only with sentinels (a url carries its own"],
    [{ clusterNodes: ["redis://y"], name: "m" }, "RedisStore: name applies only with sentinels"],
    [{ sentinels: [], name: "m" }, "RedisStore: sentinels must list at least one sentinel"],
    [{ sentinels: [{ host: "a" }], name: "m" }, "RedisStore: sentinels.0.port must be an integer from 1 to 65535, got undefined"],
    [{ sentinels: [{ host: "", port: 1 }], name: "m" }, "RedisStore: sentinels.0.host must be"],
    [{ sentinels }, "RedisStore: name must be the master's name"],
    [{ sentinels, name: "m", password: "" }, "RedisStore: password must be a non-empty string"],
    [{ sentinels, name: "m", db: -1 }, "RedisStore: db must be a database number"],
    [{ sentinels, name: "m", tls: "yes" }, "RedisStore: tls must be true, false or node:tls options"],
  ])("%j is refused naming the field", (options, message) => {
    expect(() => new RedisStore(options as never)).toThrow(TypeError);
    expect(() => new RedisStore(options as never)).toThrow(message);
  });
});
