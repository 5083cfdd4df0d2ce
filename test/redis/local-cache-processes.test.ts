import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REDIS_CLIENT_OPTIONS } from "../../src/stores/redis/store.js";
import { decodeStoredState } from "../../src/stores/redis/codec.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { type HotKeyClient, runHotKey, startHotKeyClients, summarize, tokenBucketRefillsMs } from "./hot-key-processes.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

// Two Node processes, each with its own LocalCache over one real Redis, on one hot key: the
// invariants of README "Hot keys" with real clocks, sockets and scheduling (test/unit and
// test/worker hold them on a virtual clock and in workerd).
describe("LocalCache in 2 Node processes on one real Redis", () => {
  let server: RedisServer;
  let redis: Redis;
  let clients: HotKeyClient[] = [];
  const share = 0.1;

  beforeAll(async () => {
    server = await startRedis();
    redis = new Redis(server.url, REDIS_CLIENT_OPTIONS);
    clients = await startHotKeyClients(server.url, 2);
  }, 30_000);

  afterAll(async () => {
    await Promise.all(clients.map((client) => client.stop()));
    redis?.disconnect();
    await server?.stop();
  });

  const fixedWindow = (limit: number, period: string) => ({ name: "hot", algorithm: "fixed-window", limit, period, local: { share } });

  it("fixed-window, a quiet window then a surge to 3× its limit: never past the limit in any window, under by at most 2 × share × limit, few store calls", async () => {
    const limit = 2000;
    // Each process: 500/s for a window (batches still held when it ends), then 3,000/s.
    // Units kept past their window would show in the first surging one.
    const job = { key: `fixed-surge:${Date.now()}`, policy: fixedWindow(limit, "1s"), cached: true, durationMs: 2300, ratePerSec: 500, surge: { atMs: 1000, ratePerSec: 3000 }, windowMs: 1000 };
    const summary = summarize(await runHotKey(clients, redis, [job, job], { alignMs: 1000 }), limit, 1000);
    expect(summary.errors).toBe(0);
    expect(summary.overAdmitted).toBe(0);
    expect(summary.fullWindows).toBeGreaterThanOrEqual(1);
    expect(summary.worstUnderAdmitted).toBeLessThanOrEqual(2 * share * limit);
    expect(summary.underAdmittedTotal).toBeLessThanOrEqual(2 * share * limit);
    expect(summary.storeCallsPerDecision).toBeLessThan(0.05);
  });

  it("fixed-window under its limit: every request admitted in whole windows, store calls per decision well below 1", async () => {
    const limit = 2000;
    // 2 × 800/s: 1,600 of the 2,000 a window allows.
    const job = { key: `fixed-under:${Date.now()}`, policy: fixedWindow(limit, "1s"), cached: true, durationMs: 2300, ratePerSec: 800, windowMs: 1000 };
    const summary = summarize(await runHotKey(clients, redis, [job, job]), limit, 1000);
    expect(summary.errors).toBe(0);
    expect(summary.overAdmitted).toBe(0);
    expect(summary.underAdmittedTotal).toBe(0);
    expect(summary.storeCallsPerDecision).toBeLessThan(0.1);
  });

  it("token-bucket, full then a surge at a refill: no refill interval admits more than the burst, under by at most 2 × share × burst", async () => {
    const [limit, periodMs] = [500, 250];
    const policy = { name: "hot", algorithm: "token-bucket", limit, period: `${periodMs}ms`, burst: limit, local: { share } };
    // Each process: 250/s for two refill intervals (the bucket refills to full while batches are
    // held), then 3,000/s. Units kept past their interval would join a full bucket's burst.
    const job = { key: `bucket-surge:${Date.now()}`, policy, cached: true, durationMs: 2000, ratePerSec: 250, surge: { atMs: 2 * periodMs, ratePerSec: 3000 }, windowMs: periodMs, admissionSpans: true };
    // The bucket's grid, read from its state in Redis as the run goes.
    const stateKey = keyLayout("hotkey:", job.key).stateKey("hot");
    const anchorsMs: number[] = [];
    let running = true;
    const watching = (async () => {
      while (running) {
        const raw = await redis.get(stateKey);
        if (raw) {
          const stored = decodeStoredState(raw);
          if (stored.algorithm === "token-bucket" && stored.state.anchorMs !== anchorsMs.at(-1)) anchorsMs.push(stored.state.anchorMs);
        }
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    const run = await runHotKey(clients, redis, [job, job]).finally(() => (running = false));
    await watching;
    expect(summarize(run, limit, periodMs).storeCallsPerDecision).toBeLessThan(0.05);
    expect(run.reports.map((report) => report.errors)).toEqual([0, 0]);
    const spans = run.reports.flatMap((report) => report.admissionSpansMs!);
    const endMs = run.startAtMs + job.durationMs;
    const refills = tokenBucketRefillsMs(anchorsMs, periodMs, endMs + periodMs);
    const surgeFromMs = run.startAtMs + job.surge.atMs;
    for (const [index, fromMs] of refills.entries()) {
      const toMs = refills[index + 1] ?? Infinity;
      // Certainly decided between two refills: at most what the bucket held after the first, the burst.
      expect(spans.filter(([askedAtMs, answeredAtMs]) => askedAtMs >= fromMs && answeredAtMs < toMs).length).toBeLessThanOrEqual(limit);
      // Surging all through a refill interval: the bucket's refill is admitted, but for the units two batches may strand.
      if (fromMs >= surgeFromMs && toMs <= endMs) {
        expect(spans.filter(([askedAtMs, answeredAtMs]) => answeredAtMs >= fromMs && askedAtMs < toMs).length).toBeGreaterThanOrEqual(limit - 2 * share * limit);
      }
    }
    expect(refills.filter((atMs) => atMs >= surgeFromMs && atMs + periodMs <= endMs).length).toBeGreaterThanOrEqual(4);
  });

  it("a denied hot key is answered from the deny cache: almost no store calls once the limit is reached", async () => {
    // One window of an hour: the run must not cross its end (epoch-aligned), so wait if it is near.
    const hourMs = 3_600_000;
    const leftMs = hourMs - (Date.now() % hourMs);
    if (leftMs < 3000) await new Promise((resolve) => setTimeout(resolve, leftMs + 50));
    const limit = 500;
    const key = `denied:${Date.now()}`;
    const job = (durationMs: number) => ({ key, policy: fixedWindow(limit, "1h"), cached: true, durationMs, ratePerSec: 5000, windowMs: hourMs });
    // First the limit is spent (a burst larger than a batch goes to the store request by request).
    const spending = summarize(await runHotKey(clients, redis, [job(400), job(400)]), limit, hourMs);
    expect(spending.errors).toBe(0);
    expect(spending.admitted).toBeLessThanOrEqual(limit);
    // Batches left unspent when the run stops: at most one per process.
    expect(spending.admitted).toBeGreaterThanOrEqual(limit - 2 * share * limit);
    // Then, with fresh caches, a second of denials: each process asks Redis once and then itself.
    const denying = await runHotKey(clients, redis, [job(1000), job(1000)]);
    const summary = summarize(denying, limit, hourMs);
    expect([summary.errors, summary.admitted]).toEqual([0, 0]);
    expect(summary.decisions).toBeGreaterThan(5000);
    expect(denying.storeCalls).toBeLessThanOrEqual(2 * 2);
  });
});
