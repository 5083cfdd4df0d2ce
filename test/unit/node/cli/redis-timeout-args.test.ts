import { describe, expect, it } from "vitest";
import { SERVE_USAGE, parseServeArgs } from "../../../../src/node/args/serve.js";
import { redisStoreOptions } from "../../../../src/node/serve/stores.js";

// `spillway serve --redis-timeout`: the Redis store's per-call timeout, for every Redis store
// (standalone, Cluster, Sentinel) and from REDIS_TIMEOUT when the flag is not given.

const config = ["--config", "c.json"];
const redis = [...config, "--redis", "redis://127.0.0.1:6379"];
const timeoutOf = (argv: string[], env: Record<string, string> = {}) => (parseServeArgs(argv, env).store as { timeoutMs?: number }).timeoutMs;

describe("--redis-timeout", () => {
  it.each([
    ["500ms", 500],
    ["500", 500],
    ["1s", 1000],
    ["0.25s", 250],
    ["1ms", 1],
    ["10s", 10_000],
    ["10000", 10_000],
    // Go's forms too, as `spillway rls` reads REDIS_TIMEOUT: one variable, one meaning.
    ["1s500ms", 1500],
    ["1.005s", 1005],
    ["250000us", 250],
  ])("takes %j as %i ms", (value, ms) => {
    expect(timeoutOf([...redis, "--redis-timeout", value])).toBe(ms);
  });

  it("leaves the store's default (50 ms) when neither the flag nor REDIS_TIMEOUT is given", () => {
    expect(timeoutOf(redis)).toBeUndefined();
    expect(redisStoreOptions({ kind: "redis", url: "redis://h:1" })).toEqual({ url: "redis://h:1" });
  });

  it("reaches the options of every Redis store: standalone, Cluster and Sentinel", () => {
    const standalone = parseServeArgs([...redis, "--redis-timeout", "400ms"], {}).store;
    const cluster = parseServeArgs([...config, "--redis-cluster", "redis://a:7000,redis://b:7001", "--redis-timeout", "400ms", "--max-inflight", "64"], {}).store;
    const sentinel = parseServeArgs([...config, "--redis-sentinel", "s1:26379", "--redis-sentinel-name", "m", "--redis-timeout", "400ms"], {}).store;
    if (standalone.kind !== "redis" || cluster.kind !== "redis-cluster" || sentinel.kind !== "redis-sentinel") throw new Error("a store of another kind");
    expect(redisStoreOptions(standalone)).toEqual({ url: "redis://127.0.0.1:6379", timeoutMs: 400 });
    expect(redisStoreOptions(cluster)).toEqual({ clusterNodes: ["redis://a:7000", "redis://b:7001"], maxInFlight: 64, timeoutMs: 400 });
    expect(redisStoreOptions(sentinel)).toMatchObject({ sentinels: [{ host: "s1", port: 26379 }], name: "m", timeoutMs: 400 });
  });

  it("reads REDIS_TIMEOUT when the flag is not given; the flag wins", () => {
    expect(timeoutOf(redis, { REDIS_TIMEOUT: "300ms" })).toBe(300);
    expect(timeoutOf([...config], { REDIS_URL: "redis://h:1", REDIS_TIMEOUT: "2s" })).toBe(2000);
    expect(timeoutOf([...redis, "--redis-timeout", "100ms"], { REDIS_TIMEOUT: "garbage" })).toBe(100);
    expect(timeoutOf(redis, { REDIS_TIMEOUT: "1s500ms" })).toBe(1500);
    expect(() => parseServeArgs(redis, { REDIS_TIMEOUT: "0" })).toThrow(/^REDIS_TIMEOUT: must be from 1ms to 10s/);
  });

  it.each([
    ["abc", /must be a duration such as 250ms, 1s or 1s500ms \(or a number of milliseconds\), got "abc"/],
    ["", /must be a duration such as 250ms, 1s or 1s500ms/],
    ["5m", /must be from 1ms to 10s/],
    ["1s 500ms", /must be a duration such as 250ms, 1s or 1s500ms/],
    ["500us", /must be a whole number of milliseconds, got "500us"/],
    // A negative number is one, below the range: said as the range.
    ["-5", /must be from 1ms to 10s \(default 50ms\)/],
    ["-5ms", /must be from 1ms to 10s \(default 50ms\)/],
    ["-0.5", /must be from 1ms to 10s/],
    ["0", /must be from 1ms to 10s \(default 50ms\): 0 would fail every call/],
    ["0ms", /must be from 1ms to 10s/],
    ["0.5ms", /must be a whole number of milliseconds, got "0.5ms"/],
    ["10001", /must be from 1ms to 10s/],
    ["11s", /must be from 1ms to 10s/],
    ["1e9", /must be a duration such as 250ms, 1s/],
    ["Infinity", /must be a duration such as 250ms, 1s/],
  ])("refuses %j, naming --redis-timeout", (value, pattern) => {
    let message = "";
    try {
      parseServeArgs([...redis, `--redis-timeout=${value}`], {});
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/^--redis-timeout: /);
    expect(message).toMatch(pattern);
  });

  // node's parseArgs took "-1" after a flag for another flag: "argument is ambiguous", no range.
  it.each([
    [["--redis-timeout", "-1"], /^--redis-timeout: must be from 1ms to 10s \(default 50ms\).*got "-1"$/],
    [["--redis-timeout=-1"], /^--redis-timeout: must be from 1ms to 10s/],
    [["--port", "-1"], /^--port: must be an integer from 0 to 65535, got "-1"$/],
    [["--metrics-port", "-1"], /^--metrics-port: must be an integer from 0 to 65535, got "-1"$/],
    [["--workers", "-1"], /^--workers: must be a number of processes from 1 to 1024, or auto \(one per core\), got "-1"$/],
    [["--max-inflight", "-1"], /^--max-inflight: must be a positive integer, got "-1"$/],
    [["--rls-port", "-1", "--rls-config", "limits.yaml"], /^--rls-port: must be an integer from 0 to 65535, got "-1"$/],
  ])("%j: names the flag and its range", (flags, pattern) => {
    expect(() => parseServeArgs([...redis, ...flags], {})).toThrow(pattern);
  });

  it("still takes a flag after a flag that wants a value for what it is", () => {
    expect(() => parseServeArgs([...redis, "--port", "--workers", "2"], {})).toThrow(/^arguments: Option '--port' argument is ambiguous/);
    expect(() => parseServeArgs([...config, "--store", "memory", "--memory-max-keys", "-1"], {})).toThrow(/^--memory-max-keys: must be a positive integer, got "-1"$/);
  });

  it("refuses a flag without a value, and the memory store, whose calls never leave the process", () => {
    expect(() => parseServeArgs([...redis, "--redis-timeout"], {})).toThrow(/--redis-timeout/);
    expect(() => parseServeArgs([...config, "--store", "memory", "--redis-timeout", "1s"], {})).toThrow(/^--redis-timeout: only applies to Redis/);
    // The environment's REDIS_TIMEOUT is not read for a store chosen by flag, as REDIS_URL is not.
    expect(parseServeArgs([...config, "--store", "memory"], { REDIS_TIMEOUT: "1s" }).store).toEqual({ kind: "memory" });
  });

  it("is in the usage text, with its default and bounds", () => {
    expect(SERVE_USAGE).toMatch(/--redis-timeout D +how long a Redis call may take, from its write to the reply \(default 50ms;/);
    expect(SERVE_USAGE).toMatch(/1ms to 10s; or REDIS_TIMEOUT/);
  });
});
