import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Hono } from "hono";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { rateLimit } from "../../src/http/middleware.js";
import { StoreUnavailableError } from "../../src/core/limiter.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { freePort } from "../../scripts/free-port.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const perMinuteInput = { name: "per-minute", algorithm: "gcra", limit: 5, period: "1m", failMode: "closed" };
const perMinute = [parsePolicy(perMinuteInput, "policy")];
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

// The README's swap: `new RedisStore({ url })` where MemoryStore was, default timeoutMs (50 ms),
// no ready() awaited. Calls made before the first connection is up wait for it (up to the
// client's connect timeout), not the 50 ms a decision may take once connected.
describe("a RedisStore is usable the moment it is built", () => {
  let server: RedisServer;
  const stores: RedisStore[] = [];
  const fresh = (url: string) => {
    const store = new RedisStore({ url, log: () => {} });
    stores.push(store);
    return store;
  };

  beforeAll(async () => {
    server = await startRedis();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await server?.stop();
  });

  // A fresh process is where it showed: its first connection's ready check outlasts 50 ms, and
  // so, on a fresh redis-server, does the first call's library load (FCALL, FUNCTION LOAD, FCALL).
  it("in a fresh process, the first request is a 200, and close() lets the process exit", async () => {
    const fixture = fileURLToPath(new URL("./fixtures/first-request.ts", import.meta.url));
    const hooks = fileURLToPath(new URL("../../bin/ts-hooks.mjs", import.meta.url));
    const admin = new Redis(server.url);
    for (let run = 0; run < 3; run++) {
      if (run > 0) await admin.function("FLUSH");
      const { stdout } = await promisify(execFile)(process.execPath, ["--no-warnings", "--import", hooks, fixture, server.url], { timeout: 20_000 });
      expect(stdout.trim()).toBe("200");
    }
    admin.disconnect();
  });

  it("decides the calls made right after new RedisStore, with the default timeoutMs", async () => {
    for (let run = 0; run < 5; run++) {
      const store = fresh(server.url);
      const decisions = await Promise.all([1, 2, 3].map(() => store.check(`first-${run}`, perMinute, reject)));
      expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, true]);
      expect(decisions.map((decision) => decision.remaining).sort()).toEqual([2, 3, 4]);
    }
  });

  it("answers the first request through rateLimit() with 200", async () => {
    const store = fresh(server.url);
    const app = new Hono();
    app.use(rateLimit({ store, policies: perMinuteInput, key: (c) => c.req.header("x-api-key") }));
    app.get("/", (c) => c.text("hello"));
    const response = await app.request("/", { headers: { "x-api-key": "alice" } });
    expect(response.status).toBe(200);
    expect(response.headers.get("ratelimit")).toBe('"per-minute";r=4;t=12');
  });

  it("a Redis that refuses the connection: the first call fails as unavailable, naming why (then failMode decides)", async () => {
    const store = fresh(`redis://127.0.0.1:${await freePort()}`);
    const error = await store.check("nobody", perMinute, reject).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StoreUnavailableError);
    expect((error as Error).message).toMatch(/ECONNREFUSED/);
    const app = new Hono();
    app.use(rateLimit({ store, policies: { ...perMinuteInput, failMode: "open" }, key: () => "k" }));
    app.get("/", (c) => c.text("hello"));
    expect((await app.request("/")).status).toBe(200);
  });
});
