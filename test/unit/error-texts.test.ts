import { type ChildProcess, spawn } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { httpLimiter } from "../../src/client/index.js";
import { parseConfig, parseConfigText } from "../../src/config.js";
import { parseCheck, parseCredits, parseKeyRequest } from "../../src/requests.js";
import { parseGatewayConfig } from "../../src/gateway/config.js";
import { parseCheckArgs, parseServeArgs } from "../../src/node/cli-args.js";
import { MemoryStore, startServer } from "../../src/node-middleware.js";
import { rateLimit } from "../../src/hono.js";
import { runSpillway } from "./cli-process.js";

// The error texts a newcomer met in the first hour (issue 45, "Found by a newcomer", 6), each
// with the exact words it says now: the field in Spillway's words, what it takes, and where to
// look next.

const catalog = parseConfig({ policies: [{ name: "per-minute", limit: 10, period: "1m" }] }).catalog;
const message = (run: () => unknown): string => {
  try {
    run();
  } catch (error) {
    return (error as Error).message;
  }
  return "accepted";
};

describe("a required field left out", () => {
  it("is 'is required (what it takes)', never the validator's 'must be nonoptional'", () => {
    const policy = "policy: is required (a policy name, an inline policy or an array of them)";
    expect(message(() => parseCheck({ key: "alice" }, catalog))).toBe(policy);
    expect(message(() => parseKeyRequest({ key: "alice" }, catalog))).toBe(policy);
    expect(message(() => parseCredits({ key: "alice", add: 1 }, catalog))).toBe(policy);
    expect(message(() => parseCheck({ policy: "per-minute" }, catalog))).toBe("key: is required (a string of 1 to 512 UTF-8 bytes)");
    // Given, but wrong, is still the rule and the value.
    expect(message(() => parseCheck({ key: 5, policy: "per-minute" }, catalog))).toBe("key: must be a string of 1 to 512 UTF-8 bytes, got 5");
  });

  it("in a config file: a policy's limit, a policy's name, an override's policy, a route's policies", () => {
    expect(message(() => parseConfig({ policies: [{ name: "a", period: "1s" }] }))).toBe("policies.a.limit: is required (a positive integer from 1 to 1000000000)");
    expect(message(() => parseConfig({ policies: [{ limit: 1, period: "1s" }] }))).toBe("policies.0.name: is required (a string)");
    expect(message(() => parseConfig({ policies: [], overrides: [{ key: "x" }] }))).toBe("overrides.0.policy: is required (a policy name from the config)");
    const route = { origin: "http://127.0.0.1:1", policies: [{ name: "a", limit: 1, period: "1s" }], routes: [{ match: { path: "/*" }, key: "ip" }] };
    expect(message(() => parseGatewayConfig(parseConfig(route)))).toBe("routes.0.policies: is required (a policy name, an inline policy or an array of them)");
  });
});

describe("an unknown field of a config file", () => {
  it("suggests the near one, a singular for its plural included", () => {
    expect(message(() => parseConfig({ policy: [{ name: "a", limit: 1, period: "1s" }] }))).toBe('policy: is not a known field (did you mean "policies"?)');
    const route = { origin: "http://127.0.0.1:1", policies: [{ name: "a", limit: 1, period: "1s" }], routes: [{ match: { path: "/*" }, key: "ip", policy: ["a"] }] };
    expect(message(() => parseGatewayConfig(parseConfig(route)))).toBe('routes.0.policy: is not a known field (did you mean "policies"?)');
    expect(message(() => parseConfig({ policies: [], override: [] }))).toBe('override: is not a known field (did you mean "overrides"?)');
  });
});

describe("--config is JSON", () => {
  it("a YAML file says that --config takes JSON and YAML is --rls-config's", () => {
    expect(message(() => parseConfigText("policies: []\n", "conf.yaml"))).toBe(
      "conf.yaml: is not JSON, and --config takes JSON only (spillway.config.json: the one file the Worker and Node both read); YAML is for --rls-config, envoyproxy/ratelimit's files (Unexpected token 'p', \"policies: [] \" is not valid JSON)",
    );
    // A .json file keeps the parser's words, and a YAML-named file holding JSON is read.
    expect(message(() => parseConfigText("{", "spillway.config.json"))).toMatch(/^spillway\.config\.json: is not valid JSON \(/);
    expect(parseConfigText('{"policies":[]}', "conf.yaml").policies).toEqual([]);
  });
});

describe("flags", () => {
  it("an unknown one suggests the near flag and points to the command's --help", () => {
    expect(message(() => parseServeArgs(["--prot", "8787"], {}))).toBe("--prot: is not a flag of spillway serve (did you mean --port?); spillway serve --help lists them");
    expect(message(() => parseServeArgs(["--no-metric"], {}))).toBe("--no-metric: is not a flag of spillway serve (did you mean --no-metrics?); spillway serve --help lists them");
    expect(message(() => parseServeArgs(["--frobnicate"], {}))).toBe("--frobnicate: is not a flag of spillway serve; spillway serve --help lists them");
    expect(message(() => parseServeArgs(["--port"], {}))).toBe("--port: needs a value; spillway serve --help says what it takes");
    expect(message(() => parseServeArgs(["spillway.config.json"], {}))).toBe('arguments: spillway serve takes flags only, got "spillway.config.json"; spillway serve --help lists them');
    expect(message(() => parseCheckArgs(["--confg", "x.json"]))).toBe("--confg: is not a flag of spillway check (did you mean --config?); spillway check --help lists them");
  });

  it("init and rls point to their --help too", { timeout: 30_000 }, async () => {
    const [init, rls] = await Promise.all([runSpillway(["init", "--force", "x"]), runSpillway(["rls", "--port", "1"])]);
    expect(init.status).toBe(2);
    expect(init.stderr.trim()).toBe("spillway: --force: spillway init takes one directory and no flags: spillway init my-limiter; spillway init --help says more");
    expect(rls.status).toBe(2);
    expect(rls.stderr.trim()).toBe(
      `spillway: rls takes no arguments: it is configured by envoyproxy/ratelimit's environment variables (REDIS_URL, RUNTIME_ROOT, GRPC_PORT …), got "--port"; spillway rls --help says more`,
    );
  });

  it("--redis-sentinel given a URL says HOST:PORT, not a URL, and never repeats the URL's password", () => {
    const args = (list: string) => ["--config", "c.json", "--redis-sentinel", list, "--redis-sentinel-name", "mymaster"];
    expect(message(() => parseServeArgs(args("redis://127.0.0.1:26379"), {}))).toBe(
      '--redis-sentinel: lists sentinels as HOST:PORT, not a URL: write 127.0.0.1:26379 for "redis://127.0.0.1:26379" (a password goes in --redis-password and --redis-sentinel-password, TLS is --redis-sentinel-tls)',
    );
    const secret = message(() => parseServeArgs(args("redis://user:hunter2@10.0.0.2"), {}));
    expect(secret).toBe(
      '--redis-sentinel: lists sentinels as HOST:PORT, not a URL: write 10.0.0.2:26379 for "redis://…@10.0.0.2" (a password goes in --redis-password and --redis-sentinel-password, TLS is --redis-sentinel-tls)',
    );
    expect(secret).not.toContain("hunter2");
  });
});

describe("rateLimit() options brought from express-rate-limit", () => {
  it("the windowMs hint shows the user's own window and limit, converted", () => {
    const build = (options: Record<string, unknown>) => message(() => rateLimit({ store: new MemoryStore(), key: () => "k", ...options } as never));
    expect(build({ windowMs: 60_000 })).toBe(
      'rateLimit: unknown option "windowMs": Spillway\'s equivalent is a policy\'s period: policies: { name: "per-1m", limit: 100, period: "1m" } (windowMs: 60000 is period: "1m", or period: 60000)',
    );
    expect(build({ windowMs: 15 * 60 * 1000, max: 250 })).toBe(
      'rateLimit: unknown option "windowMs": Spillway\'s equivalent is a policy\'s period: policies: { name: "per-15m", limit: 250, period: "15m" } (windowMs: 900000 is period: "15m", or period: 900000)',
    );
    expect(build({ max: 5, windowMs: 1500 })).toBe('rateLimit: unknown option "max": Spillway\'s equivalent is a policy\'s limit: policies: { name: "per-1500ms", limit: 5, period: "1500ms" }');
    // rate-limiter-flexible's duration is in seconds.
    expect(build({ points: 10, duration: 3600 })).toBe('rateLimit: unknown option "points": Spillway\'s equivalent is a policy\'s limit: policies: { name: "per-1h", limit: 10, period: "1h" }');
  });
});

describe("httpLimiter", () => {
  it("names itself and SPILLWAY_TOKEN", () => {
    expect(message(() => httpLimiter({ url: "http://127.0.0.1:8787", token: undefined as never }))).toBe("httpLimiter: token: must be a non-empty string (the server's SPILLWAY_TOKEN), got nothing");
    expect(message(() => httpLimiter({ url: "127.0.0.1:8787", token: "t" }))).toBe('httpLimiter: url: must be an http(s) URL, got "127.0.0.1:8787"');
  });

  it("an unreachable server: the address and the cause's code, not a bare 'fetch failed'", async () => {
    // A port just freed: nothing listens there, so the connection is refused.
    const port = await new Promise<number>((resolve) => {
      const server = createServer().listen(0, "127.0.0.1", () => {
        const { port } = server.address() as { port: number };
        server.close(() => resolve(port));
      });
    });
    const limiter = httpLimiter({ url: `http://127.0.0.1:${port}`, token: "t" });
    await expect(limiter.check("k", [catalog.get("per-minute")!], { cost: 1, mode: "reject", maxWaitMs: 0 })).rejects.toThrow(
      `limiter at 127.0.0.1:${port} unreachable: fetch failed (ECONNREFUSED 127.0.0.1:${port})`,
    );
  });
});

describe("Spillway's own paths, where there is nothing to serve", () => {
  const children: ChildProcess[] = [];
  afterEach(() => {
    for (const child of children.splice(0)) if (child.exitCode === null) child.kill("SIGKILL");
  });

  it("spillway serve --no-metrics: /dashboard says the flag is why; GET / points to POST /v1/check", { timeout: 30_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "spillway-texts-"));
    const config = join(dir, "spillway.config.json");
    writeFileSync(config, JSON.stringify({ policies: [{ name: "per-minute", limit: 10, period: "1m" }] }));
    const child = spawn(process.execPath, [new URL("../../bin/spillway.mjs", import.meta.url).pathname, "serve", "--config", config, "--store", "memory", "--port", "0", "--no-metrics"], {
      env: { ...process.env, SPILLWAY_TOKEN: "t" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      let output = "";
      child.stdout!.on("data", (chunk: Buffer) => {
        output += chunk;
        const match = /listening on (http:\/\/\S+)/.exec(output);
        if (match) resolve(match[1]!);
      });
      child.once("exit", () => reject(new Error(`serve exited: ${output}`)));
    });
    const dashboard = await fetch(`${url}/dashboard`);
    expect(dashboard.status).toBe(404);
    expect(((await dashboard.json()) as { detail: string }).detail).toBe(
      "/dashboard is not served here: spillway serve runs with --no-metrics (start it without that flag for /metrics, /v1/top, /v1/stats and /dashboard)",
    );
    const root = await fetch(`${url}/`);
    expect(root.status).toBe(404);
    expect(((await root.json()) as { detail: string }).detail).toBe(ROOT_DETAIL);
  });

  it("startServer without observability: the 404 says it was started without it", async () => {
    const server = await startServer({ config: parseConfig({ policies: [] }), limiter: new MemoryStore(), port: 0, token: "t" });
    try {
      const metrics = await fetch(`${server.url}/metrics`);
      expect(((await metrics.json()) as { detail: string }).detail).toBe("/metrics is not served here: this server was started without it");
    } finally {
      await server.close();
    }
  });
});

export const ROOT_DETAIL =
  'no route for GET /: this is Spillway\'s API, not a page: ask with POST /v1/check {"key":"alice","policy":"NAME"} and Authorization: Bearer $SPILLWAY_TOKEN; GET /healthz needs no token (docs/http-api.md)';
