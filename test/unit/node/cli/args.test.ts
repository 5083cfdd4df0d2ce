import { describe, expect, it } from "vitest";
import { ValidationError } from "../../../../src/core/validation.js";
import { parseServeArgs } from "../../../../src/node/args/serve.js";

const fieldOf = (argv: string[], env: Record<string, string> = {}) => {
  try {
    parseServeArgs(argv, env);
    return "accepted";
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    return error.field;
  }
};

describe("spillway serve flags", () => {
  it("parses every store choice", () => {
    expect(parseServeArgs(["--config", "c.json", "--store", "memory"], {})).toEqual({ configPath: "c.json", port: 8787, hostname: "127.0.0.1", store: { kind: "memory" }, metrics: true });
    expect(parseServeArgs(["--config", "c.json", "--redis", "redis://127.0.0.1:6379", "--port", "0"], {}).store).toEqual({ kind: "redis", url: "redis://127.0.0.1:6379" });
    expect(parseServeArgs(["--config", "c.json"], { REDIS_URL: "rediss://cache:6380" }).store).toEqual({ kind: "redis", url: "rediss://cache:6380" });
    expect(parseServeArgs(["--config", "c.json", "--store", "memory", "--memory-max-keys", "5000"], {}).store).toEqual({ kind: "memory", maxKeys: 5000 });
    expect(parseServeArgs(["--config", "c.json", "--redis-cluster", "redis://a:7000, redis://b:7001"], {}).store).toEqual({ kind: "redis-cluster", urls: ["redis://a:7000", "redis://b:7001"] });
  });

  it("parses --metrics-port and --no-metrics, and refuses them together or a bad port", () => {
    const memory = ["--config", "c.json", "--store", "memory"];
    expect(parseServeArgs([...memory, "--metrics-port", "9464"], {})).toMatchObject({ metrics: true, metricsPort: 9464 });
    expect(parseServeArgs([...memory, "--no-metrics"], {})).toMatchObject({ metrics: false });
    expect(fieldOf([...memory, "--no-metrics", "--metrics-port", "9464"])).toBe("--metrics-port");
    expect(() => parseServeArgs([...memory, "--metrics-port", "http"], {})).toThrow('--metrics-port: must be an integer from 0 to 65535, got "http"');
  });

  it("names the flag of every mistake", () => {
    expect(fieldOf(["--store", "memory"])).toBe("--config");
    expect(fieldOf(["--config", "c.json"])).toBe("--store");
    expect(fieldOf(["--config", "c.json", "--store", "disk"])).toBe("--store");
    expect(fieldOf(["--config", "c.json", "--store", "memory", "--redis", "redis://x"])).toBe("--store");
    expect(fieldOf(["--config", "c.json", "--store", "memory", "--port", "http"])).toBe("--port");
    expect(fieldOf(["--config", "c.json", "--store", "memory", "--port", "70000"])).toBe("--port");
    expect(fieldOf(["--config", "c.json", "--redis", "localhost:6379"])).toBe("--redis");
    expect(fieldOf(["--config", "c.json"], { REDIS_URL: "http://x" })).toBe("REDIS_URL");
    expect(fieldOf(["--config", "c.json", "--redis-cluster", ","])).toBe("--redis-cluster");
    expect(fieldOf(["--config", "c.json", "--store", "memory", "--verbose"])).toBe("--verbose");
    for (const bad of ["0", "abc", "1.5", "1e3", "", "99999999999999999999"]) expect(fieldOf(["--config", "c.json", "--store", "memory", "--memory-max-keys", bad])).toBe("--memory-max-keys");
    expect(fieldOf(["--config", "c.json", "--store", "memory", "--memory-max-keys=-5"])).toBe("--memory-max-keys");
    expect(fieldOf(["--config", "c.json", "--redis", "redis://x", "--memory-max-keys", "1000"])).toBe("--memory-max-keys");
    expect(fieldOf(["--config", "c.json", "--memory-max-keys", "1000"], { REDIS_URL: "redis://x" })).toBe("--memory-max-keys");
  });
});
