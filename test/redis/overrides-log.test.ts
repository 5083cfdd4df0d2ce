import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { Overrides } from "../../src/overrides/overrides.js";
import { KEPT_CHANGES, type OverrideTable } from "../../src/overrides/table.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// How processes follow runtime overrides in Redis: after one whole read, a change costs a
// reader the changes only (never the table), a change made by an older release (no log) is
// still seen, and a reader further behind than the log reads the table whole.

const policy = parsePolicy({ name: "logged", algorithm: "fixed-window", limit: 2, period: "1h" }, "p");
const catalog = new Map([[policy.name, policy]]);

let redis: RedisServer;
let store: RedisStore;
beforeAll(async () => {
  redis = await startRedis();
  store = new RedisStore({ url: redis.url, timeoutMs: 2000, log: () => {} });
  await store.ready();
});
afterAll(async () => {
  await store?.close();
  await redis?.stop();
});

/** The store's table, counting whole reads (pages) and change reads. */
function counted(table: OverrideTable) {
  const calls = { pages: 0, changes: 0 };
  const wrapped: OverrideTable = {
    versions: (names) => table.versions(names),
    changes: (name, since) => (calls.changes++, table.changes(name, since)),
    page: (name, cursor, count) => (calls.pages++, table.page(name, cursor, count)),
    put: (override) => table.put(override),
    delete: (name, source, key) => table.delete(name, source, key),
  };
  return { wrapped, calls };
}

describe("following runtime overrides in Redis", () => {
  it("after one whole read, a change costs a reader its changes, not the table", async () => {
    const table = store.overrides;
    for (let i = 0; i < 3000; i++) await table.put({ policy: "logged", key: `k${i}`, limit: 5 });
    const { wrapped, calls } = counted(table);
    const clock = { ms: 0 };
    const reader = new Overrides({ catalog, table: wrapped, ttlMs: 1000, clockMs: () => clock.ms });
    expect((await reader.resolve([policy], "k1"))[0]!.limit).toBe(5);
    expect(calls.pages).toBeGreaterThanOrEqual(3); // the first read: the whole table, in pages
    const pagesAfterFirstRead = calls.pages;
    await table.put({ policy: "logged", key: "k1", limit: 9 });
    await table.delete("logged", undefined, "k2");
    await table.put({ policy: "logged", key: "k2", source: "ip", limit: 11 });
    clock.ms = 5000;
    expect((await reader.resolve([policy], "k1"))[0]!.limit).toBe(9);
    expect(reader.find("logged", "k2")).toBeUndefined();
    expect(reader.find("logged", "k2", "ip")?.limit).toBe(11);
    expect(calls.pages).toBe(pagesAfterFirstRead);
    expect(calls.changes).toBeGreaterThanOrEqual(1);
  });

  it("a change written by an older release (no log) is still seen: the reader reads the table whole", async () => {
    const table = store.overrides;
    const { wrapped, calls } = counted(table);
    const clock = { ms: 0 };
    const reader = new Overrides({ catalog, table: wrapped, ttlMs: 1000, clockMs: () => clock.ms });
    await reader.resolve([policy], "x");
    // What an older release's PUT did: HSET and INCR, nothing else.
    await store.client.hset("spillway:{overrides:logged}:~overrides", "legacy", JSON.stringify({ policy: "logged", key: "legacy", limit: 42 }));
    await store.client.incr("spillway:{overrides:logged}:~version");
    const pages = calls.pages;
    clock.ms = 5000;
    expect((await reader.resolve([policy], "legacy"))[0]!.limit).toBe(42);
    expect(calls.pages).toBeGreaterThan(pages);
    // Then the log is followed again: the next change costs no whole read.
    const pagesAfterLegacy = calls.pages;
    await table.put({ policy: "logged", key: "after-legacy", limit: 41 });
    clock.ms = 7000;
    expect((await reader.resolve([policy], "after-legacy"))[0]!.limit).toBe(41);
    expect(calls.pages).toBe(pagesAfterLegacy);
    // An older change, then a logged one: a reader that held the version before both still sees both.
    const behind = new Overrides({ catalog, table: store.overrides, ttlMs: 1000, clockMs: () => clock.ms });
    await behind.resolve([policy], "x");
    await store.client.hset("spillway:{overrides:logged}:~overrides", "legacy-2", JSON.stringify({ policy: "logged", key: "legacy-2", limit: 43 }));
    await store.client.incr("spillway:{overrides:logged}:~version");
    await table.put({ policy: "logged", key: "new", limit: 44 });
    clock.ms = 12_000;
    expect((await behind.resolve([policy], "legacy-2"))[0]!.limit).toBe(43);
    expect(behind.find("logged", "new")?.limit).toBe(44);
  });

  it(`keeps the latest ${KEPT_CHANGES} changes: a reader further behind reads the table whole`, async () => {
    const table = store.overrides;
    const [start] = await table.versions(["trimmed"]);
    for (let i = 0; i < KEPT_CHANGES * 1.25 + 2; i++) await table.put({ policy: "trimmed", key: `k${i}`, limit: 1 });
    expect(await table.changes("trimmed", start!)).toBeUndefined();
    const [now] = await table.versions(["trimmed"]);
    expect((await table.changes("trimmed", now! - 3))!.put.map((one) => one.key)).toHaveLength(3);
    expect(await store.client.zcard("spillway:{overrides:trimmed}:~changes")).toBeLessThanOrEqual(KEPT_CHANGES * 1.25);
  });
});

describe("what a process's first read of runtime overrides costs Redis", () => {
  const three = ["first-a", "first-b", "first-c"].map((name) => parsePolicy({ name, algorithm: "fixed-window", limit: 2, period: "1h" }, "p"));
  const threeCatalog = new Map(three.map((one) => [one.name, one]));

  /** The calls Redis counted (INFO commandstats) while `run` ran, by command: scripts and the commands they ran. */
  async function commandsOf(run: () => Promise<unknown>): Promise<Record<string, number>> {
    await store.client.config("RESETSTAT");
    await run();
    const stats = (await store.client.info("commandstats")) as string;
    return Object.fromEntries([...stats.matchAll(/^cmdstat_([a-z|]+):calls=(\d+)/gm)].map((match) => [match[1]!, Number(match[2])]));
  }

  it("no policy holds an override: one call per policy (its version), no page, no changes", async () => {
    const reader = new Overrides({ catalog: threeCatalog, table: store.overrides, ttlMs: 1000, clockMs: () => 0 });
    const counts = await commandsOf(async () => reader.resolve(three, "k"));
    expect(counts.eval).toBe(3);
    expect(counts.hscan).toBeUndefined();
    expect(counts.zrangebyscore).toBeUndefined();
  });

  it("one policy holds one: its version and its first page with the version it was read at, nothing more", async () => {
    await store.overrides.put({ policy: "first-b", key: "vip", limit: 7 });
    const reader = new Overrides({ catalog: threeCatalog, table: store.overrides, ttlMs: 1000, clockMs: () => 0 });
    let limit: number | undefined;
    const counts = await commandsOf(async () => (limit = (await reader.resolve([three[1]!], "vip"))[0]!.limit));
    expect(limit).toBe(7);
    // Three versions and one page (an EVAL holding the HSCAN): no versions call before the page, no changes after it.
    expect(counts.eval).toBe(4);
    expect(counts.hscan).toBe(1);
  });

  it("an evicted version beside overrides is never taken for an empty policy", async () => {
    await store.overrides.put({ policy: "first-c", key: "kept", limit: 9 });
    // What allkeys-lru (or a hand) may do: the version goes, the hash stays.
    await store.client.del("spillway:{overrides:first-c}:~version");
    expect(await store.overrides.versions(["first-c"])).toEqual([-1]);
    const clock = { ms: 0 };
    const reader = new Overrides({ catalog: threeCatalog, table: store.overrides, ttlMs: 1000, clockMs: () => clock.ms });
    expect((await reader.resolve([three[2]!], "kept"))[0]!.limit).toBe(9);
    // Followed from there: a later change is seen.
    await store.overrides.put({ policy: "first-c", key: "later", limit: 8 });
    clock.ms = 5000;
    expect((await reader.resolve([three[2]!], "later"))[0]!.limit).toBe(8);
  });
});
