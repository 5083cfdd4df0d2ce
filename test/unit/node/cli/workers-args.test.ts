import { availableParallelism } from "node:os";
import { describe, expect, it } from "vitest";
import { parseServeArgs } from "../../../../src/node/args/serve.js";

const redis = ["--config", "c.json", "--redis", "redis://127.0.0.1:6379"];

describe("--workers", () => {
  it("takes a count, or auto for one per core, with every Redis store", () => {
    expect(parseServeArgs([...redis, "--workers", "4"], {}).workers).toBe(4);
    expect(parseServeArgs([...redis, "--workers", "auto"], {}).workers).toBe(availableParallelism());
    expect(parseServeArgs(["--config", "c.json", "--redis-cluster", "redis://a:7000", "--workers", "2"], {}).workers).toBe(2);
    expect(parseServeArgs(["--config", "c.json", "--workers", "2"], { REDIS_SENTINELS: "s:26379", REDIS_SENTINEL_NAME: "m" }).workers).toBe(2);
    expect(parseServeArgs(redis, {}).workers).toBeUndefined();
  });

  it.each([["0"], ["abc"], ["-1"], ["1.5"], [""], ["2000"]])("refuses %j naming --workers", (value) => {
    expect(() => parseServeArgs([...redis, `--workers=${value}`], {})).toThrow(/^--workers: must be a number of processes from 1 to 1024, or auto/);
  });

  it("refuses the memory store, whose counts each worker would keep apart", () => {
    expect(() => parseServeArgs(["--config", "c.json", "--store", "memory", "--workers", "2"], {})).toThrow(/^--workers: needs a Redis store .* N times the limit/);
  });
});
