import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { StoreFaultError } from "../../src/core/limiter.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const daily = parsePolicy({ name: "daily", algorithm: "fixed-window", limit: 3, calendar: "day", timezone: "Pacific/Chatham" }, "policy");
const prepaid = parsePolicy({ name: "prepaid", algorithm: "credits", limit: 10 }, "policy");
const refilled = parsePolicy({ name: "refilled", algorithm: "credits", limit: 10, refill: { calendar: "month" } }, "policy");

/** Hours and minutes of an instant on Chatham's wall clock (UTC+12:45, +13:45 in summer), read with Intl here. */
const chatham = (atMs: number) => new Intl.DateTimeFormat("en-GB", { timeZone: "Pacific/Chatham", hour: "2-digit", minute: "2-digit", second: "2-digit", hourCycle: "h23" }).format(atMs);

describe("calendar windows and credits on Redis's own clock", () => {
  let server: RedisServer;
  let admin: Redis;
  let store: RedisStore;

  beforeAll(async () => {
    server = await startRedis();
    admin = new Redis(server.url);
    store = new RedisStore({ url: server.url, keyPrefix: "cal:" });
    expect(await store.ready()).toBe(true);
  });

  /** Redis's own clock, to the millisecond (as the scripts read it). */
  const redisNowMs = async () => {
    const [seconds, micros] = (await admin.time()) as [number | string, number | string];
    return Number(seconds) * 1000 + Math.floor(Number(micros) / 1000);
  };

  afterAll(async () => {
    await store?.close();
    admin?.disconnect();
    await server?.stop();
  });

  it("the server clock decides the window: resetMs runs to Chatham's midnight (a zone 12:45 or 13:45 from UTC)", async () => {
    const decision = await store.check("alice", [daily], reject);
    expect(decision).toMatchObject({ allowed: true, remaining: 2 });
    // Redis's clock read after the decision: at or just past the boundary, whatever this process's clock says.
    expect(["00:00:00", "00:00:01"]).toContain(chatham((await redisNowMs()) + decision.resetMs));
  });

  it("a process whose clock is off by less than the margin (an hour) still decides by Redis's clock", async () => {
    const spy = vi.spyOn(Date, "now").mockImplementation(() => new Date().getTime() + 50 * 60_000);
    try {
      const decision = await store.check("bob", [daily], reject);
      expect(["00:00:00", "00:00:01"]).toContain(chatham((await redisNowMs()) + decision.resetMs));
    } finally {
      spy.mockRestore();
    }
  });

  it("a process whose clock is off by days is a store fault, never a decision", async () => {
    const spy = vi.spyOn(Date, "now").mockImplementation(() => new Date().getTime() + 3 * 86_400_000);
    try {
      await expect(store.check("carol", [daily], reject)).rejects.toBeInstanceOf(StoreFaultError);
    } finally {
      spy.mockRestore();
    }
  });

  it("a balance: a spent one is kept without an expiry, one back at its limit is deleted, a refilled one expires at the boundary", async () => {
    const key = "cal:{dave}:prepaid";
    expect(await store.credits("dave", prepaid, { add: 0 })).toEqual({ remaining: 10 });
    expect(await admin.exists(key)).toBe(0);
    await store.check("dave", [prepaid], { ...reject, cost: 4 });
    expect(await admin.get(key)).toBe("k:6:0");
    expect(await admin.pttl(key)).toBe(-1);
    expect(await store.credits("dave", prepaid, { add: 4 })).toEqual({ remaining: 10 });
    expect(await admin.exists(key)).toBe(0);
    await store.check("dave", [refilled], { ...reject, cost: 1 });
    const ttlMs = await admin.pttl("cal:{dave}:refilled");
    const monthEnd = new Date((await redisNowMs()) + ttlMs);
    expect([monthEnd.getUTCDate(), monthEnd.getUTCHours(), monthEnd.getUTCMinutes()]).toEqual([1, 0, 0]);
  });

  it("under a burst from two processes' worth of connections: a balance and a calendar day admit exactly their limit, and concurrent top-ups all land", async () => {
    const other = new RedisStore({ url: server.url, keyPrefix: "cal:" });
    expect(await other.ready()).toBe(true);
    try {
      const stores = [store, other];
      const spend = await Promise.all(Array.from({ length: 120 }, (_, i) => stores[i % 2]!.check("frank", [prepaid], reject)));
      expect(spend.filter((decision) => decision.allowed)).toHaveLength(10);
      const ups = await Promise.all(Array.from({ length: 40 }, (_, i) => stores[i % 2]!.credits("frank", prepaid, { add: 1 })));
      expect(Math.max(...ups.map((up) => up.remaining))).toBe(40);
      expect((await store.peek("frank", [prepaid])).remaining).toBe(40);
      const day = await Promise.all(Array.from({ length: 60 }, (_, i) => stores[i % 2]!.check("frank", [daily], reject)));
      expect(day.filter((decision) => decision.allowed)).toHaveLength(3);
    } finally {
      await other.close();
    }
  });

  it("bad changes are refused before Redis is asked", async () => {
    await expect(store.credits("erin", daily, { add: 1 })).rejects.toThrow(/^policy: "daily" is fixed-window/);
    await expect(store.credits("erin", prepaid, { add: -1 })).rejects.toThrow(/^add: must be an integer from 0 to 1000000000000000, got -1/);
    await expect(store.credits("erin", prepaid, { add: 1, set: 1 } as never)).rejects.toThrow(/give exactly one of add and set/);
  });
});
