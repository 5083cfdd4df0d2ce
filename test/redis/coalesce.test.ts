import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { StoreUnavailableError } from "../../src/core/limiter.js";
import { COALESCE_MIN_IN_FLIGHT } from "../../src/stores/redis/coalesce.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/stores/redis/store.js";
import { type RedisServer, connectRedis, disconnectRedis } from "../../scripts/redis-server.js";
import { Redis as RedisClient } from "ioredis";

const hundredPerHour = parsePolicy({ name: "hundred", algorithm: "fixed-window", limit: 100, period: "1h" }, "policy");
const plenty = parsePolicy({ name: "plenty", algorithm: "gcra", limit: 1_000_000, period: "1s" }, "policy");
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));

async function readsProcessed(client: Redis): Promise<number> {
  return Number(/total_reads_processed:(\d+)/.exec(await client.info("stats"))?.[1]);
}

describe("write coalescing under load (standalone Redis)", () => {
  let server: RedisServer;
  let client: Redis;
  let admin: Redis;
  let run = 0;
  const storeOn = (target: Redis, coalesceWrites?: boolean) => new RedisStore({ client: target, keyPrefix: `coalesce${++run}:`, timeoutMs: 5000, coalesceWrites });

  beforeAll(async () => {
    ({ server, client } = await connectRedis());
    admin = new RedisClient(server.url, REDIS_CLIENT_OPTIONS);
    await new Promise((resolve) => admin.once("ready", resolve));
  });

  afterAll(async () => {
    admin?.disconnect();
    await disconnectRedis(server, client);
  });

  it("holds a burst's writes to the end of the turn, sends them in a few reads, and every decision is exact", async () => {
    const store = storeOn(client);
    await store.check("warm", [hundredPerHour], reject); // the library is loaded: one FCALL per check from here on
    const readsBefore = await readsProcessed(admin);
    const pending = Array.from({ length: 300 }, () => store.check("burst", [hundredPerHour], reject));
    // Past COALESCE_MIN_IN_FLIGHT commands in flight, the socket was corked for this turn.
    expect(client.stream.writableCorked).toBe(1);
    await endOfTurn();
    expect(client.stream.writableCorked).toBe(0);
    const decisions = await Promise.all(pending);
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(100);
    expect(decisions.slice(0, 100).every((decision) => decision.allowed)).toBe(true);
    // One write per command would be up to 300 reads for Redis; held writes arrive together. How many
    // reads the held ~30 KB take depends on how Redis is scheduled against this process (38 were seen on
    // a loaded 2-core CI machine), so the bound is a third of one read per command, not a tight count.
    // (The INFO call itself is one more read.)
    const reads = (await readsProcessed(admin)) - readsBefore;
    expect(reads).toBeLessThan(100);
  });

  it("keeps every reply matched to its command when other commands share the client", async () => {
    const store = storeOn(client);
    const checks: Promise<unknown>[] = [];
    const echoes: Promise<string>[] = [];
    for (let i = 0; i < 200; i++) {
      checks.push(store.check(`mixed${i % 7}`, [plenty], reject));
      echoes.push(client.echo(`message ${i}`));
    }
    expect(client.stream.writableCorked).toBe(1);
    expect(await Promise.all(echoes)).toEqual(Array.from({ length: 200 }, (_, i) => `message ${i}`));
    const decisions = (await Promise.all(checks)) as { allowed: boolean; limit: number }[];
    expect(decisions.every((decision) => decision.allowed && decision.limit === plenty.burst)).toBe(true);
  });

  it("sends at once with few commands in flight, and never holds with coalesceWrites: false", async () => {
    const store = storeOn(client);
    const few = Array.from({ length: COALESCE_MIN_IN_FLIGHT - 1 }, () => store.check("few", [plenty], reject));
    expect(client.stream.writableCorked).toBe(0);
    await Promise.all(few);

    const uncoalesced = storeOn(client, false);
    const burst = Array.from({ length: 300 }, () => uncoalesced.check("off", [plenty], reject));
    expect(client.stream.writableCorked).toBe(0);
    expect((await Promise.all(burst)).every((decision) => decision.allowed)).toBe(true);
  });

  it("a connection lost while writes are held fails those calls (closed), and the client recovers", async () => {
    const own = new RedisClient(server.url, REDIS_CLIENT_OPTIONS);
    own.on("error", () => {});
    try {
      await new Promise((resolve) => own.once("ready", resolve));
      // The store says when Redis goes and comes back: captured, and checked, instead of printed.
      const logged: string[] = [];
      const store = new RedisStore({ client: own, keyPrefix: `coalesce${++run}:`, timeoutMs: 5000, log: (line) => logged.push(line) });
      await store.check("warm", [plenty], reject);
      const pending = Array.from({ length: 100 }, () => store.check("lost", [plenty], reject));
      expect(own.stream.writableCorked).toBe(1);
      own.stream.destroy();
      const results = await Promise.allSettled(pending);
      expect(results.every((result) => result.status === "rejected" && result.reason instanceof StoreUnavailableError)).toBe(true);
      await new Promise((resolve) => own.once("ready", resolve));
      expect((await store.check("lost", [plenty], reject)).allowed).toBe(true);
      expect(logged).toEqual([expect.stringContaining("redis store unavailable"), "spillway: redis store available again"]);
    } finally {
      own.disconnect();
    }
  });

  it("refuses a coalesceWrites that is not a boolean, naming the option", () => {
    expect(() => new RedisStore({ client, coalesceWrites: "yes" as unknown as boolean })).toThrow(/coalesceWrites must be true or false, got yes/);
  });
});
