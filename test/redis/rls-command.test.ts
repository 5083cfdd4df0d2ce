import { type ChildProcess, spawn } from "node:child_process";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { freePort } from "../../scripts/free-port.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { d, rlsClient } from "../unit/node/grpc/rls-helpers.js";
import { TestXdsServer } from "../unit/node/grpc/xds-server.js";
import { runtimeRoot, waitFor } from "./rls-env-helpers.js";

const BIN = new URL("../../bin/spillway.mjs", import.meta.url).pathname;
const EXAMPLE = new URL("../unit/fixtures/envoy-example.yaml", import.meta.url);

/** `spillway rls` as a deployment runs it: a process with the reference's variables and nothing else. */
function spawnRls(env: Record<string, string>) {
  const child: ChildProcess = spawn(process.execPath, [BIN, "rls"], { env: { PATH: process.env.PATH ?? "", ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout?.on("data", (chunk) => (output += chunk));
  child.stderr?.on("data", (chunk) => (output += chunk));
  const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  return { child, exit, output: () => output };
}

describe("spillway rls, started with only the reference's variables", { timeout: 60_000 }, () => {
  let redis: RedisServer;
  beforeAll(async () => {
    redis = await startRedis();
  });
  afterAll(async () => {
    await redis?.stop();
  });

  it("answers ShouldRateLimit from the files of its runtime root, reports health, re-reads them on SIGHUP, and stops on SIGTERM", async () => {
    const { root, dir } = await runtimeRoot({ "example.yaml": await readFile(EXAMPLE, "utf8") });
    const [grpcPort, httpPort] = [await freePort(), await freePort()];
    const rls = spawnRls({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, RUNTIME_ROOT: root, RUNTIME_SUBDIRECTORY: "ratelimit", GRPC_PORT: String(grpcPort), PORT: String(httpPort), USE_STATSD: "false", REDIS_TIMEOUT: "2s" });
    try {
      const health = await waitFor(
        () => fetch(`http://127.0.0.1:${httpPort}/healthcheck`).then((answer) => answer.status, () => 0),
        (status) => status === 200 || rls.child.exitCode !== null,
        30_000,
      );
      expect(health, rls.output()).toBe(200);
      const client = rlsClient(`127.0.0.1:${grpcPort}`);
      try {
        // The reference's example: quota descriptors, a replaced limit, a blocked value.
        expect((await client.ask("rl", [d(["service", "service_1"])])).overall_code).toBe("OK");
        const mixed = await client.ask("rl", [d(["service", "service_1"]), d(["service", "service_2"])]);
        expect([mixed.overall_code, ...mixed.statuses.map((status) => status.code)]).toEqual(["OK", "OVER_LIMIT", "OK"]);
        expect((await client.ask("rl", [d(["foo", "x"], ["bar", "banned"])])).overall_code).toBe("OVER_LIMIT");
        // SIGHUP re-reads the files (the default RUNTIME_WATCH_ROOT reloads only on a swap of the root).
        await writeFile(join(dir, "more.yaml"), "domain: more\ndescriptors:\n  - key: k\n    rate_limit: { unit: hour, requests_per_unit: 9 }\n");
        rls.child.kill("SIGHUP");
        const limit = await waitFor(
          async () => (await client.ask("more", [d(["k", "v"])])).statuses[0]!.current_limit?.requests_per_unit,
          (value) => value === 9,
          20_000,
        );
        expect(limit).toBe(9);
      } finally {
        client.close();
      }
    } finally {
      rls.child.kill("SIGTERM");
    }
    expect(await rls.exit).toBe(0);
    expect(rls.output()).not.toMatch(/error|Error/);
    // Up, said once at the default LOG_LEVEL (warn, as the reference's "Listening for gRPC" lines are).
    expect(rls.output().match(/msg="rate limit service \(gRPC\) on /g), rls.output()).toHaveLength(1);
  });

  // `spillway serve` reads REDIS_URL=redis://host:port; under the reference's default
  // REDIS_SOCKET_TYPE=unix it is a socket path, and such a start kept failing to connect (ENOENT), saying nothing.
  it.each([`redis://127.0.0.1:PORT`, `127.0.0.1:PORT`])("exits 2 for REDIS_URL=%s under the default socket type unix, saying what to set", async (url) => {
    const rls = spawnRls({ REDIS_URL: url.replace("PORT", String(redis.port)) });
    expect(await rls.exit).toBe(2);
    expect(rls.output()).toContain(`REDIS_URL: "${url.replace("PORT", String(redis.port))}" is a TCP address, but REDIS_SOCKET_TYPE is unix (the reference's default), which reads REDIS_URL as a socket path: set REDIS_SOCKET_TYPE=tcp and REDIS_URL=127.0.0.1:${redis.port}`);
    expect(rls.output()).not.toMatch(/ENOENT|^\s+at /m);
  });

  it("exits 2 naming a variable it refuses, before connecting anywhere", async () => {
    const rls = spawnRls({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, BACKEND_TYPE: "memcache" });
    expect(await rls.exit).toBe(2);
    expect(rls.output()).toContain('BACKEND_TYPE: "memcache" is not supported by spillway rls');
  });

  it("with CONFIG_TYPE=GRPC_XDS_SOTW, subscribes as its node and waits for the first config; a SIGTERM meanwhile exits 0", async () => {
    // Serving what is pushed is tested in process (test/redis/rls-xds.test.ts): here, the process's own wait and stop.
    const xds = await new TestXdsServer().start();
    try {
      const rls = spawnRls({ REDIS_SOCKET_TYPE: "tcp", REDIS_URL: `127.0.0.1:${redis.port}`, CONFIG_TYPE: "GRPC_XDS_SOTW", CONFIG_GRPC_XDS_SERVER_URL: xds.address, CONFIG_GRPC_XDS_NODE_ID: "envoy-ratelimit", GRPC_PORT: String(await freePort()), PORT: String(await freePort()), USE_STATSD: "false" });
      await xds.next((request) => request.node?.id === "envoy-ratelimit", 40_000);
      rls.child.kill("SIGTERM");
      expect(await rls.exit).toBe(0);
      expect(rls.output()).toContain(`waiting for the first config from the xDS server at ${xds.address}`);
    } finally {
      xds.stop();
    }
  });
});
