import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { storedFreshAtMs } from "../../src/core/algorithms.js";
import { parsePolicy } from "../../src/core/policy.js";
import { decodeStoredState } from "../../src/stores/redis/codec.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

describe("Redis: debit and block on the server clock", () => {
  let server: RedisServer;
  let admin: Redis;
  let store: RedisStore;

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
    store = new RedisStore({ url: server.url, keyPrefix: "block:", timeoutMs: 2000 });
    expect(await store.ready()).toBe(true);
  });

  afterAll(async () => {
    await store?.close();
    admin?.disconnect();
    await server?.stop();
  });

  it("a block keeps the key until it ends (one key: the block rides in the state's value)", async () => {
    const policy = parsePolicy({ name: "boxed", algorithm: "gcra", limit: 1, period: "100ms", block: "20s" }, "policy");
    expect((await store.check("mallory", [policy], reject)).allowed).toBe(true);
    const denied = await store.check("mallory", [policy], reject);
    expect(denied).toMatchObject({ allowed: false, blockedMs: 20_000, retryAfterMs: 20_000 });
    const key = keyLayout("block:", "mallory").stateKey("boxed");
    const raw = (await admin.get(key))!;
    expect(raw).toMatch(/^b:\d+\|g:/);
    const stored = decodeStoredState(raw);
    expect(await admin.pexpiretime(key)).toBe(Math.ceil(storedFreshAtMs(stored, policy)));
    expect(stored.blockedUntilMs).toBe(Math.ceil(storedFreshAtMs(stored, policy)));
    // The state alone is fresh after 100 ms; the block still refuses, and the key holds it.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(await store.check("mallory", [policy], reject)).toMatchObject({ allowed: false, blockedMs: expect.any(Number) });
    expect(await admin.pexpiretime(key)).toBe(stored.blockedUntilMs);
    // Another process (its own client) sees the same block.
    const other = new RedisStore({ url: server.url, keyPrefix: "block:", timeoutMs: 2000 });
    try {
      expect(await other.peek("mallory", [policy])).toMatchObject({ allowed: false, remaining: 0, blockedMs: expect.any(Number) });
    } finally {
      await other.close();
    }
    await store.reset("mallory", [policy]);
    expect(await admin.exists(key)).toBe(0);
    expect((await store.check("mallory", [policy], reject)).allowed).toBe(true);
  });

  it("debits past the limit and refuses a concurrency stack naming mode, before any call", async () => {
    const perMinute = parsePolicy({ name: "per-minute", algorithm: "fixed-window", limit: 10, period: "1m" }, "policy");
    expect(await store.debit("tenant", [perMinute], 25)).toMatchObject({ allowed: false, remaining: 0 });
    expect((await store.check("tenant", [perMinute], reject)).allowed).toBe(false);
    const slots = parsePolicy({ name: "slots", algorithm: "concurrency", limit: 1 }, "policy");
    await expect(store.debit("tenant", [perMinute, slots], 1)).rejects.toThrow(/^mode: "debit" is not for concurrency/);
  });
});
