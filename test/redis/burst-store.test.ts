// The Redis store under a burst (issue 22): its timeout measures Redis, not this process;
// its calls in flight are bounded; and what it sheds is a 503 that never admits.
import { afterAll, afterEach, beforeAll, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import { LocalCache } from "../../src/local/local-cache.js";
import { StoreUnavailableError } from "../../src/core/limiter.js";
import { RedisStore, type RedisStoreOptions } from "../../src/stores/redis/store.js";
import { OVERLOADED_TYPE } from "../../src/core/wire.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";
import { type BurstServer, LIMIT, startBurstServer } from "../unit/node/serve/burst-servers.js";
import { pipelinedMixed } from "../unit/node/serve/burst-scenarios.js";

const big = parsePolicy({ name: "big", algorithm: "fixed-window", limit: 1_000_000, period: "1h" }, "policy");
const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

let redis: RedisServer;
let run = 0;
const stores: RedisStore[] = [];
let server: BurstServer | undefined;

beforeAll(async () => {
  redis = await startRedis();
});
afterEach(async () => {
  await server?.close();
  server = undefined;
  await Promise.all(stores.splice(0).map((store) => store.close()));
});
afterAll(async () => {
  await redis?.stop();
});

async function store(options: Partial<RedisStoreOptions> = {}): Promise<RedisStore> {
  const made = new RedisStore({ url: redis.url, keyPrefix: `store${++run}:`, log: () => {}, ...options });
  stores.push(made);
  expect(await made.ready()).toBe(true);
  return made;
}

it("time this process spends busy after sending (parsing the rest of a burst) does not count against the store timeout", { timeout: 30_000 }, async () => {
  const limiter = await store({ timeoutMs: 200 });
  const calls = Array.from({ length: 2000 }, (_, i) => limiter.check(`busy-${i % 50}`, [big], reject));
  // A long turn after the sends, as when thousands of requests arrive in one read. The writes
  // go out at its end; counted from the hand-over, every call would be past its 200 ms already.
  const busyUntil = performance.now() + 1000;
  while (performance.now() < busyUntil);
  const results = await Promise.allSettled(calls);
  const failed = results.filter((result) => result.status === "rejected");
  expect(failed.map((result) => String((result as PromiseRejectedResult).reason))).toEqual([]);
});

it("calls in flight stay within maxInFlight; the rest wait in order and are all answered, none timed out", { timeout: 30_000 }, async () => {
  const limiter = await store({ maxInFlight: 16 });
  const calls = Array.from({ length: 3000 }, (_, i) => limiter.check(`bound-${i % 10}`, [big], reject));
  expect(limiter.callCounts()).toEqual({ inFlight: 16, queued: 2984, shed: 0 });
  const results = await Promise.allSettled(calls);
  expect(results.filter((result) => result.status === "rejected")).toEqual([]);
  expect(limiter.callCounts()).toEqual({ inFlight: 0, queued: 0, shed: 0 });
  // Nothing was counted twice or lost: 300 per key.
  expect((await limiter.peek("bound-0", [big])).remaining).toBe(1_000_000 - 300);
});

it("a saturated server sheds with 503 overloaded and Retry-After, admits nothing beyond the limit even with failMode open, and /metrics counts it", { timeout: 60_000 }, async () => {
  const limiter = await store({ maxInFlight: 1, maxQueued: 5 });
  server = await startBurstServer(new LocalCache(limiter), "open");
  const outcome = await pipelinedMixed(server, "shed-", 400);
  const shed = outcome.answers.filter((answer) => answer.status === 503);
  expect(shed.length).toBeGreaterThan(0);
  for (const answer of shed) {
    expect(JSON.parse(answer.body)).toMatchObject({ type: OVERLOADED_TYPE, status: 503 });
    expect(answer.headers["retry-after"]).toBe("1");
  }
  expect(outcome.failedOpen).toBe(0);
  for (const [key, count] of outcome.admitted) expect(count, key).toBeLessThanOrEqual(LIMIT);
  const metrics = await server.metrics();
  const shedTotal = Number(/^spillway_shed_total\{store="redis"\} (\d+)$/m.exec(metrics)?.[1]);
  expect(shedTotal).toBe(limiter.callCounts().shed);
  expect(shedTotal).toBeGreaterThanOrEqual(shed.length);
  expect(metrics).toMatch(/^spillway_queue_depth\{store="redis"\} 0$/m);
  expect(metrics).toMatch(/^spillway_store_errors_total\{store="redis",kind="fault"\} 0$/m);
});

it("a store that stops answering still times out within its timeout of the write", { timeout: 30_000 }, async () => {
  const limiter = await store({ timeoutMs: 100 });
  const pid = redis.process.pid!;
  process.kill(pid, "SIGSTOP");
  try {
    const begin = performance.now();
    const results = await Promise.allSettled(Array.from({ length: 50 }, () => limiter.check("stopped", [big], reject)));
    expect(performance.now() - begin).toBeLessThan(1000);
    for (const result of results) expect((result as PromiseRejectedResult).reason).toBeInstanceOf(StoreUnavailableError);
  } finally {
    process.kill(pid, "SIGCONT");
  }
});
