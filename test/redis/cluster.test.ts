import type { Cluster } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { StoreFaultError, StoreUnavailableError, applyFailMode } from "../../src/core/limiter.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { translateRedisError } from "../../src/stores/redis/errors.js";
import { escapeUserKey, keyLayout } from "../../src/stores/redis/keys.js";
import { runnerFor } from "../../src/stores/redis/run.js";
import { scriptFor } from "../../src/stores/redis/scripts.js";
import { type RedisClusterServers, connectRedisCluster, disconnectRedis } from "../../scripts/redis-server.js";

/** Keys built to break naive hash tags and encodings. */
const TRICKY_KEYS = [
  "plain",
  "{plain}",
  "}plain{",
  "{",
  "}",
  "{}",
  "a{b}c",
  "%7Bplain%7D",
  "%",
  "nul\u0000byte",
  "nul\u0000byte\u0000",
  "\u0000",
  "lone \uD800 high",
  "lone \uD801 high",
  "lone \uDC00 low",
  "pair \uD83D\uDE00 ok",
  "ü".repeat(256), // 512 UTF-8 bytes
  "😀".repeat(128), // 512 UTF-8 bytes
  "spillway:{plain}:g",
];

const limitOne = parsePolicy({ name: "g", algorithm: "fixed-window", limit: 1, period: "1h" }, "policy");
const second = parsePolicy({ name: "h", algorithm: "gcra", limit: 5, period: "1m" }, "policy");

describe("keys", () => {
  it("escaping is injective and leaves no braces", () => {
    const escaped = TRICKY_KEYS.map(escapeUserKey);
    expect(new Set(escaped).size).toBe(TRICKY_KEYS.length);
    for (const text of escaped) expect(text).not.toMatch(/[{}]/);
    // No two different JS strings share UTF-8 bytes after escaping (lone surrogates are spelled out).
    const bytes = escaped.map((text) => Buffer.from(text, "utf8").toString("hex"));
    expect(new Set(bytes).size).toBe(TRICKY_KEYS.length);
  });

  it("refuses a key prefix with braces", () => {
    expect(() => new RedisStore({ url: "redis://127.0.0.1:1", keyPrefix: "a{b}:" })).toThrow(TypeError);
  });
});

describe("Redis Cluster specifics", () => {
  let servers: RedisClusterServers;
  let cluster: Cluster;

  beforeAll(async () => {
    ({ servers, cluster } = await connectRedisCluster(3));
  });

  afterAll(() => disconnectRedis(servers, cluster));

  it("puts every key of a user key in the slot of its escaped tag", async () => {
    const node = cluster.nodes("master")[0]!;
    for (const userKey of TRICKY_KEYS) {
      const layout = keyLayout("spillway:", userKey);
      const expected = await node.cluster("KEYSLOT", escapeUserKey(userKey));
      for (const key of [layout.queueKey, layout.waitersKey, layout.stateKey("g"), layout.stateKey("h")]) {
        expect(await node.cluster("KEYSLOT", key), JSON.stringify(userKey)).toBe(expected);
      }
    }
  });

  it("decides stacked policies for tricky keys without collisions", async () => {
    const store = new RedisStore({ client: cluster, keyPrefix: "tricky:", timeoutMs: 1000 });
    for (const userKey of TRICKY_KEYS) {
      expect((await store.check(userKey, [limitOne, second], { cost: 1, mode: "reject", maxWaitMs: 0 })).allowed, JSON.stringify(userKey)).toBe(true);
    }
    for (const userKey of TRICKY_KEYS) {
      const decision = await store.peek(userKey, [limitOne, second]);
      expect(decision.allowed, JSON.stringify(userKey)).toBe(false);
      expect(decision.policies.map((result) => result.remaining)).toEqual([0, 4]);
    }
  });

  it("runtime overrides work on a Cluster: each policy's table and version share a slot, policies spread over the masters", async () => {
    const store = new RedisStore({ client: cluster, keyPrefix: "overrides:", timeoutMs: 2000 });
    const table = store.overrides;
    const policies = Array.from({ length: 12 }, (_, i) => `plan-${i}`);
    const masters = new Set<string>();
    for (const policy of policies) {
      const base = `overrides:{overrides:${policy}}:`;
      const slot = await cluster.cluster("KEYSLOT", `${base}~overrides`);
      expect(await cluster.cluster("KEYSLOT", `${base}~version`), policy).toBe(slot);
      masters.add(String(slot));
    }
    // Several slots (and so, with 12 policies over 3 masters, more than one master): no call crosses slots.
    expect(masters.size).toBeGreaterThan(1);
    const before = await table.versions(policies);
    for (const policy of policies) await table.put({ policy, key: "customer-7", limit: 50 });
    const after = await table.versions(policies);
    for (let i = 0; i < policies.length; i++) expect(after[i], policies[i]).not.toBe(before[i]);
    for (const policy of policies) expect((await table.page(policy, undefined, 1000)).overrides).toEqual([{ policy, key: "customer-7", limit: 50 }]);
    for (let i = 0; i < policies.length; i++) expect((await table.changes(policies[i]!, before[i]!))?.put, policies[i]).toEqual([{ policy: policies[i], key: "customer-7", limit: 50 }]);
    expect(await table.delete(policies[3]!, undefined, "customer-7")).toBe(true);
    expect(await table.delete(policies[3]!, undefined, "customer-7")).toBe(false);
    expect((await table.page(policies[3]!, undefined, 1000)).overrides).toEqual([]);
    await store.close();
  });

  it("stores sharing one Cluster client share its write coalescer: one pair of node listeners, however many stores", async () => {
    new RedisStore({ client: cluster, keyPrefix: "shared:" });
    const listeners = [cluster.listenerCount("+node"), cluster.listenerCount("-node")];
    const stores = Array.from({ length: 20 }, (_, i) => new RedisStore({ client: cluster, keyPrefix: `shared${i}:` }));
    expect([cluster.listenerCount("+node"), cluster.listenerCount("-node")]).toEqual(listeners);
    await Promise.all(stores.map((store) => store.close()));
    expect([cluster.listenerCount("+node"), cluster.listenerCount("-node")]).toEqual(listeners);
  });

  it("holds a burst's writes on each busy master to the end of the turn, and every decision is exact", async () => {
    const store = new RedisStore({ client: cluster, keyPrefix: "burst:", timeoutMs: 5000 });
    const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
    await store.check("warm", [limitOne], reject); // the library is loaded on every master
    const users = Array.from({ length: 60 }, (_, i) => `user${i}`);
    const pending = users.flatMap((user) => Array.from({ length: 5 }, () => store.check(user, [limitOne], reject)));
    const masters = cluster.nodes("master");
    expect(masters.filter((node) => node.stream.writableCorked > 0).length).toBeGreaterThan(0);
    await new Promise((resolve) => setImmediate(resolve));
    expect(masters.every((node) => node.stream.writableCorked === 0)).toBe(true);
    const decisions = await Promise.all(pending);
    users.forEach((user, i) => {
      // Per user, the first of its five checks (sent first, answered first) is the one admitted.
      expect(decisions.slice(i * 5, i * 5 + 5).map((decision) => decision.allowed), user).toEqual([true, false, false, false, false]);
    });
  });

  it("wakes a lease waiter through the cluster bus (no polling), for keys on every master", async () => {
    const slots = parsePolicy({ name: "slots", algorithm: "concurrency", limit: 1, lease: "30s" }, "policy");
    const holderStore = new RedisStore({ client: cluster, keyPrefix: "wake:", timeoutMs: 1000 });
    const waiterStore = new RedisStore({ client: cluster.duplicate(), keyPrefix: "wake:", timeoutMs: 1000, pollIntervalMs: 10_000 });
    expect(await waiterStore.ready()).toBe(true);
    for (const userKey of ["a", "b", "c", "d", "e", "f"]) {
      const held = await holderStore.acquire(userKey, [slots], { maxWaitMs: 0 });
      expect(held.acquired).toBe(true);
      const waiting = waiterStore.acquire(userKey, [slots], { maxWaitMs: 5000 });
      await new Promise((resolve) => setTimeout(resolve, 50));
      const releasedAt = performance.now();
      if (held.acquired) await holderStore.release(userKey, [slots], held.leaseId);
      expect((await waiting).acquired, userKey).toBe(true);
      expect(performance.now() - releasedAt, userKey).toBeLessThan(500);
    }
    await waiterStore.close();
    waiterStore.client.disconnect();
  });

  it("a CROSSSLOT reply is a StoreFaultError and never admits, even with failMode open", async () => {
    const open = parsePolicy({ name: "g", algorithm: "gcra", limit: 5, period: "1m", failMode: "open" }, "policy");
    const a = keyLayout("x:", "user-a");
    const b = keyLayout("x:", "user-b");
    expect(await cluster.nodes("master")[0]!.cluster("KEYSLOT", a.stateKey("g"))).not.toBe(await cluster.nodes("master")[0]!.cluster("KEYSLOT", b.stateKey("g")));
    const args = ["", "", "x:wake", 1, "g", "gcra", 5, 60000, 5, 30000, 1, "reject", 0, "", ""];
    let caught: unknown;
    try {
      await runnerFor(cluster).evalScript(scriptFor("check", ["gcra"]), [b.stateKey("g"), a.queueKey, a.waitersKey], args);
    } catch (error) {
      caught = translateRedisError(error, "check");
    }
    expect(caught).toBeInstanceOf(StoreFaultError);
    expect(caught).not.toBeInstanceOf(StoreUnavailableError);
    expect(String((caught as Error).message)).toMatch(/CROSSSLOT/);
    await expect(applyFailMode([open], () => Promise.reject(caught))).rejects.toBeInstanceOf(StoreFaultError);
  });
});
