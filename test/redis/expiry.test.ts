import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { algorithmOf } from "../../src/core/algorithms.js";
import { parsePolicy } from "../../src/core/policy.js";
import { decodeStoredState } from "../../src/stores/redis/codec.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const POLICIES = [
  parsePolicy({ name: "g", algorithm: "gcra", limit: 3, period: "1s" }, "policy"),
  parsePolicy({ name: "t", algorithm: "token-bucket", limit: 1, period: "700ms", burst: 2 }, "policy"),
  parsePolicy({ name: "f", algorithm: "fixed-window", limit: 5, period: "1s" }, "policy"),
  parsePolicy({ name: "s", algorithm: "sliding-window", limit: 5, period: "300ms" }, "policy"),
  parsePolicy({ name: "l", algorithm: "sliding-log", limit: 5, period: "400ms" }, "policy"),
  parsePolicy({ name: "c", algorithm: "concurrency", limit: 5, lease: "600ms" }, "policy"),
];

describe("key expiry", () => {
  let server: RedisServer;
  let admin: Redis;

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
  });

  afterAll(async () => {
    admin?.disconnect();
    await server?.stop();
  });

  it("server clock: every key expires exactly when its state becomes fresh, then is gone", async () => {
    const store = new RedisStore({ url: server.url, keyPrefix: "server-clock:" });
    expect(await store.ready()).toBe(true);
    await store.check("user", POLICIES, reject);
    await store.check("user", POLICIES, { ...reject, cost: 2 });
    const layout = keyLayout("server-clock:", "user");
    for (const policy of POLICIES) {
      const stored = decodeStoredState((await admin.get(layout.stateKey(policy.name)))!);
      expect(stored.algorithm).toBe(policy.algorithm);
      const freshAtMs = algorithmOf(policy).freshAtMs(stored.state, policy);
      expect(await admin.pexpiretime(layout.stateKey(policy.name)), policy.name).toBe(Math.ceil(freshAtMs));
    }
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // Fixed window keys live to the end of their aligned window: at most 1 s.
    expect(await admin.exists(...POLICIES.map((policy) => layout.stateKey(policy.name)))).toBe(0);
    await store.close();
  });

  it("server clock, one policy at a time: after every admission the key expires when its state becomes fresh; a window's count going up keeps the expiry", async () => {
    const store = new RedisStore({ url: server.url, keyPrefix: "single:" });
    expect(await store.ready()).toBe(true);
    const monitor = await admin.monitor();
    const sets: string[][] = [];
    monitor.on("monitor", (_time: string, args: unknown[]) => {
      if (String(args[0]).toUpperCase() === "SET") sets.push(args.map((arg) => String(arg).toUpperCase()));
    });
    // Windows of 10 s: three checks within a few ms stay in one window.
    const singles = [
      POLICIES[0]!,
      parsePolicy({ name: "t", algorithm: "token-bucket", limit: 1, period: "700ms", burst: 5 }, "policy"),
      parsePolicy({ name: "f", algorithm: "fixed-window", limit: 5, period: "10s" }, "policy"),
      parsePolicy({ name: "s", algorithm: "sliding-window", limit: 5, period: "10s" }, "policy"),
      POLICIES[4]!,
    ];
    const layout = keyLayout("single:", "user");
    for (const policy of singles) {
      for (const options of [reject, { ...reject, cost: 2 }, { cost: 1, mode: "reserve" as const, maxWaitMs: 5000 }]) {
        expect((await store.check("user", [policy], options)).allowed, policy.name).toBe(true);
        const stored = decodeStoredState((await admin.get(layout.stateKey(policy.name)))!);
        const freshAtMs = algorithmOf(policy).freshAtMs(stored.state, policy);
        expect(await admin.pexpiretime(layout.stateKey(policy.name)), policy.name).toBe(Math.ceil(freshAtMs));
      }
    }
    // MONITOR shows a script's commands after the script: wait for the last ones.
    await admin.ping();
    await new Promise((resolve) => setTimeout(resolve, 50));
    const setsOf = (name: string) => sets.filter((args) => args[1] === layout.stateKey(name).toUpperCase());
    // Counts going up within their window: the first write sets the expiry, later ones keep it.
    for (const name of ["f", "s"]) expect(setsOf(name).map((args) => args.slice(3, 4)[0]), name).toEqual(["PXAT", "KEEPTTL", "KEEPTTL"]);
    // GCRA's state becomes fresh later with each admission: its expiry moves every time.
    expect(setsOf("g").map((args) => args[3])).toEqual(["PXAT", "PXAT", "PXAT"]);
    // Leases: releasing one that ends before another leaves the key's expiry where it is.
    const leases = POLICIES[5]!;
    const first = await store.acquire("user", [leases], { maxWaitMs: 0, leaseMs: 200 });
    const second = await store.acquire("user", [leases], { maxWaitMs: 0, leaseMs: 600 });
    expect(first.acquired && second.acquired).toBe(true);
    expect((await store.release("user", [leases], first.acquired ? first.leaseId : "")).released).toBe(true);
    const held = decodeStoredState((await admin.get(layout.stateKey("c")))!);
    expect(await admin.pexpiretime(layout.stateKey("c"))).toBe(Math.ceil(algorithmOf(leases).freshAtMs(held.state, leases)));
    await admin.ping();
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(setsOf("c").map((args) => args[3])).toEqual(["PXAT", "PXAT", "KEEPTTL"]);
    monitor.disconnect();
    await store.close();
  });

  it("client clock: keys live for the state's remaining time plus the slack", async () => {
    const store = new RedisStore({ url: server.url, keyPrefix: "client-clock:", clock: "client", clientExpirySlackMs: 5000 });
    expect(await store.ready()).toBe(true);
    await store.check("user", [POLICIES[0]!], { ...reject, cost: 3 });
    const ttlMs = await admin.pttl(keyLayout("client-clock:", "user").stateKey("g"));
    // tat is 1000 ms ahead: 1000 + 5000, less the moments since.
    expect(ttlMs).toBeGreaterThan(5900);
    expect(ttlMs).toBeLessThanOrEqual(6000);
    await store.close();
  });

  it("a denied check writes nothing; a reset deletes", async () => {
    const store = new RedisStore({ url: server.url, keyPrefix: "writes:" });
    expect(await store.ready()).toBe(true);
    const one = parsePolicy({ name: "one", algorithm: "fixed-window", limit: 1, period: "1h" }, "policy");
    const big = parsePolicy({ name: "big", algorithm: "gcra", limit: 100, period: "1h" }, "policy");
    await store.check("user", [one], reject);
    expect((await store.check("user", [one, big], reject)).allowed).toBe(false);
    const layout = keyLayout("writes:", "user");
    expect(await admin.exists(layout.stateKey("big"))).toBe(0);
    await store.reset("user", [one, big]);
    expect(await admin.exists(layout.stateKey("one"))).toBe(0);
    await store.close();
  });

  it("reports health, and its kind", async () => {
    const store = new RedisStore({ url: server.url });
    expect(await store.ready()).toBe(true);
    expect(await store.health()).toEqual({ ok: true, store: "redis" });
    await store.close();
    const nowhere = new RedisStore({ url: "redis://127.0.0.1:1", log: () => {} });
    const health = await nowhere.health();
    expect(health).toMatchObject({ ok: false, store: "redis" });
    expect(health.detail).toBeTruthy();
    await nowhere.close();
  });
});
