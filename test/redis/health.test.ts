import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import type { LogLine } from "../../src/observe/log-lines.js";
import { createNodeObservability } from "../../src/node/metrics/observability.js";
import { type RunningServer, startServer } from "../../src/node/serve/server.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const config = parseConfig({ policies: [{ name: "per-second", algorithm: "gcra", limit: 1_000_000, period: "1s" }] });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("health tells the truth about a Redis that refuses writes", { timeout: 60_000 }, () => {
  let redis: RedisServer;
  let other: RedisServer;
  let admin: Redis;
  let store: RedisStore;
  let http: RunningServer;
  const observed: LogLine[] = [];
  const stdout: string[] = [];
  const storeLog: string[] = [];

  beforeAll(async () => {
    // `other` is the master `redis` becomes a replica of: diskless sync without its 5 s wait for more replicas.
    [redis, other] = await Promise.all([startRedis(), startRedis(["--repl-diskless-sync-delay", "0"])]);
    admin = new Redis(redis.url);
    store = new RedisStore({ url: redis.url, timeoutMs: 200, log: (line) => storeLog.push(line) });
    expect(await store.ready()).toBe(true);
    const observing = createNodeObservability({ config, limiter: store, log: (line) => observed.push(line) });
    http = await startServer({ config, limiter: observing.apiLimiter, port: 0, token: "t", observability: observing.routes });
    // The HTTP error path logs to stdout: keep it, to count its lines, and keep the output quiet.
    vi.spyOn(console, "log").mockImplementation((line: unknown) => void stdout.push(String(line)));
  });
  afterAll(async () => {
    vi.restoreAllMocks();
    await http?.close();
    await store?.close();
    admin?.disconnect();
    await Promise.all([redis?.stop(), other?.stop()]);
  });

  const healthz = async () => {
    const response = await fetch(`${http.url}/healthz`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  const storeUp = async () => {
    const text = await (await fetch(`${http.url}/metrics`, { headers: { authorization: "Bearer t" } })).text();
    return /^spillway_store_up\{store="redis"\} (\d)$/m.exec(text)?.[1];
  };
  const check = async () => (await fetch(`${http.url}/v1/check`, { method: "POST", headers: { authorization: "Bearer t" }, body: JSON.stringify({ key: "k", policy: "per-second" }) })).status;
  /** Polls until /healthz answers `status` (the store's state changes on the server's time). */
  const untilHealth = async (status: number) => {
    for (let i = 0; i < 100 && (await healthz()).status !== status; i++) await sleep(50);
    return healthz();
  };
  const storeErrorLines = () => [...observed.filter((line) => line.event === "store-error").map((line) => JSON.stringify(line)), ...stdout.filter((line) => line.includes('"store-error"'))];

  it("healthy: 200 and spillway_store_up 1", async () => {
    expect(await healthz()).toEqual({ status: 200, body: { ok: true, store: "redis" } });
    expect(await storeUp()).toBe("1");
    expect(await check()).toBe(200);
  });

  it("out of memory (maxmemory + noeviction): 503 with the error, store_up 0, one log line per kind, no stack; then back on its own", async () => {
    const filler = "x".repeat(100_000);
    for (let i = 0; i < 40; i++) await admin.set(`filler:${i}`, filler);
    await admin.config("SET", "maxmemory-policy", "noeviction");
    await admin.config("SET", "maxmemory", "1mb");
    const sick = await untilHealth(503);
    expect(sick.body).toMatchObject({ ok: false, store: "redis" });
    expect(String(sick.body.error)).toMatch(/OOM/);
    expect(await storeUp()).toBe("0");
    const before = storeErrorLines().length;
    const statuses = [];
    for (let i = 0; i < 50; i++) statuses.push(await check());
    expect(new Set(statuses)).toEqual(new Set([503]));
    // 50 failed decisions: at most one line from the observer and one from the HTTP path.
    const lines = storeErrorLines().slice(before);
    expect(lines.length).toBeGreaterThanOrEqual(1);
    expect(lines.length).toBeLessThanOrEqual(2);
    for (const line of lines) {
      expect(JSON.parse(line)).toMatchObject({ spillway: true, event: "store-error", kind: "fault" });
      expect(line).toMatch(/OOM command not allowed/);
      expect(line).not.toMatch(/\n|\\n\s+at /);
    }

    await admin.config("SET", "maxmemory", "0");
    expect(await untilHealth(200)).toEqual({ status: 200, body: { ok: true, store: "redis" } });
    expect(await storeUp()).toBe("1");
    expect(await check()).toBe(200);
  });

  it("a read-only replica (REPLICAOF another server): 503 READONLY and store_up 0, then back after REPLICAOF NO ONE", async () => {
    await admin.call("REPLICAOF", "127.0.0.1", String(other.port));
    const sick = await untilHealth(503);
    expect(String(sick.body.error)).toMatch(/READONLY/);
    expect(await storeUp()).toBe("0");
    expect(await check()).toBe(503);
    // Once synced, this server holds the other's data (none of Spillway's).
    const synced = async () => /master_link_status:up/.test(await admin.info("replication"));
    for (let i = 0; i < 400 && !(await synced()); i++) await sleep(50);
    expect(await synced()).toBe(true);

    await admin.call("REPLICAOF", "NO", "ONE");
    expect((await untilHealth(200)).body).toEqual({ ok: true, store: "redis" });
    expect(await storeUp()).toBe("1");
    expect(await check()).toBe(200);
    // Becoming a replica replaced this server's data with the other's: that is a loss too.
    for (let i = 0; i < 60 && store.storeResets() === 0; i++) await sleep(50);
    expect(store.storeResets()).toBe(1);
    const text = await (await fetch(`${http.url}/metrics`, { headers: { authorization: "Bearer t" } })).text();
    expect(text).toMatch(/^spillway_store_resets_total\{store="redis"\} 1$/m);
    expect(storeLog.filter((line) => line.includes('"store-reset"'))).toHaveLength(1);
  });

  it("a password set on the server: 503 once the store's connection must authenticate, 200 once it need not", async () => {
    await admin.config("SET", "requirepass", "s3cret");
    // Connections made before keep their rights: make the store reconnect (this one stays).
    await admin.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    try {
      // First "reconnecting", then the refused AUTH of the next attempt.
      let sick = await untilHealth(503);
      for (let i = 0; i < 100 && !String(sick.body.error).includes("NOAUTH"); i++) sick = await healthz();
      expect(sick.body).toMatchObject({ ok: false, store: "redis" });
      expect(String(sick.body.error)).toMatch(/NOAUTH/);
      expect(await storeUp()).toBe("0");
    } finally {
      await admin.config("SET", "requirepass", "");
    }
    expect((await untilHealth(200)).body).toEqual({ ok: true, store: "redis" });
    expect(await storeUp()).toBe("1");
    expect(await check()).toBe(200);
  });

  it("a stalled Redis (SIGSTOP): 503 within the probe's timeout, 200 once it runs again", async () => {
    const pid = redis.process.pid!;
    process.kill(pid, "SIGSTOP");
    try {
      const sick = await healthz();
      expect(sick.status).toBe(503);
      expect(String(sick.body.error)).toMatch(/did not answer within/);
      expect(await storeUp()).toBe("0");
    } finally {
      process.kill(pid, "SIGCONT");
    }
    expect((await untilHealth(200)).body).toEqual({ ok: true, store: "redis" });
    expect(await storeUp()).toBe("1");
  });
});
