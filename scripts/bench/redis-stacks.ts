// bench:redis-stacks — what a decision on two limits at once costs Redis and Node: Spillway's
// stack.lua (each algorithm's fused step; the decision computed in Node), the same stack sent
// the long way through check.lua (the decision made in full in Lua, as before stack.lua), one
// limit alone (single.lua), and two outside anchors: the commands envoyproxy/ratelimit sends
// for two descriptors (INCRBY + EXPIRE each, pipelined: two counters, not all-or-nothing) and
// rate-limiter-flexible with two limiters (two scripts); and a calendar window and a credits
// balance alone (the long way through single.lua). Two fixed windows (1 s and 1 min,
// limits no call reaches), 10,000 keys round robin, 16 callers in a closed loop, each
// contender on its own connection to a fresh redis-server; the contenders take turns so a
// shared machine's drift falls on all alike. Figures: BENCHMARKS.md, "Redis stacks".
import { Redis } from "ioredis";
import { RateLimiterRedis } from "rate-limiter-flexible";
import { parsePolicy } from "../../src/core/index.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/redis.js";
import { startBenchRedis } from "../redis-server.js";
import { writeBenchmarkSection } from "./load.js";
import { redisUsec, resetRedisStats } from "./redis-stats.js";

const CALLERS = 16;
const KEYS = 10_000;
const TURNS = Number(process.env.BENCH_TURNS ?? 8);
const TURN_MS = 500;
const WARM_UP_MS = 1000;

const perSecond = parsePolicy({ name: "second", algorithm: "fixed-window", limit: 1_000_000_000, period: "1s" }, "policy");
const perMinute = parsePolicy({ name: "minute", algorithm: "fixed-window", limit: 1_000_000_000, period: "1m" }, "policy");
const STACK = [perSecond, perMinute];
// A calendar window and a balance, each alone: the long way in single.lua (no fused step), a
// policy argument that carries the calendar's boundaries. Limits no call reaches.
const monthly = parsePolicy({ name: "monthly", algorithm: "fixed-window", limit: 1_000_000_000, calendar: "month", timezone: "Europe/Paris" }, "policy");
const prepaid = parsePolicy({ name: "prepaid", algorithm: "credits", limit: 1_000_000_000, refill: { calendar: "month", timezone: "Europe/Paris" } }, "policy");
const REJECT = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
const RESERVE_NO_WAIT = { cost: 1, mode: "reserve" as const, maxWaitMs: 0 };

interface Contender {
  label: string;
  decide: (key: string) => Promise<unknown>;
  close: () => Promise<void> | void;
}

async function contenders(url: string): Promise<Contender[]> {
  // A generous timeout: a busy machine must slow the run down, not end it.
  const store = (prefix: string) => new RedisStore({ url, keyPrefix: prefix, timeoutMs: 2000 });
  const stacked = store("bench-stack:");
  const single = store("bench-single:");
  const longWay = store("bench-check:");
  const calendar = store("bench-calendar:");
  const credits = store("bench-credits:");
  for (const one of [stacked, single, longWay, calendar, credits]) await one.ready(5000);
  const reference = new Redis(url, REDIS_CLIENT_OPTIONS);
  const rlfClient = new Redis(url, REDIS_CLIENT_OPTIONS);
  const rlf = [
    new RateLimiterRedis({ storeClient: rlfClient, keyPrefix: "bench-rlf-second", points: 1_000_000_000, duration: 1 }),
    new RateLimiterRedis({ storeClient: rlfClient, keyPrefix: "bench-rlf-minute", points: 1_000_000_000, duration: 60 }),
  ];
  return [
    { label: "Spillway, two fixed windows in one call (stack.lua)", decide: (key) => stacked.check(key, STACK, REJECT), close: () => stacked.close() },
    // A reservation that may wait 0 ms decides exactly as a plain check does (no limit here is
    // ever reached), but stack.lua takes no reservations: check.lua decides it, in full in Lua,
    // as every stack was decided before stack.lua.
    { label: "the same two, decided in full in Lua (check.lua, the store's path for stacks stack.lua does not take)", decide: (key) => longWay.check(key, STACK, RESERVE_NO_WAIT), close: () => longWay.close() },
    { label: "Spillway, one fixed window (single.lua)", decide: (key) => single.check(key, [perSecond], REJECT), close: () => single.close() },
    { label: "Spillway, one calendar month in Europe/Paris (single.lua, the long way)", decide: (key) => calendar.check(key, [monthly], REJECT), close: () => calendar.close() },
    { label: "Spillway, one credits balance with a monthly refill (single.lua, the long way)", decide: (key) => credits.check(key, [prepaid], REJECT), close: () => credits.close() },
    {
      label: "envoyproxy/ratelimit's commands: INCRBY + EXPIRE per descriptor, pipelined",
      decide: (key) => reference.pipeline().incrby(`bench-ref:${key}:second`, 1).expire(`bench-ref:${key}:second`, 1).incrby(`bench-ref:${key}:minute`, 1).expire(`bench-ref:${key}:minute`, 60).exec(),
      close: () => reference.disconnect(),
    },
    { label: "rate-limiter-flexible, two limiters (two scripts)", decide: (key) => Promise.all(rlf.map((limiter) => limiter.consume(key))), close: () => rlfClient.disconnect() },
  ];
}

interface Tally {
  calls: number;
  elapsedMs: number;
  redisUs: number;
  nodeCpuUs: number;
}

/** CALLERS closed loops of `decide` for `durationMs`; keys round robin from `first`. */
async function turn(decide: Contender["decide"], durationMs: number, first: number): Promise<{ calls: number; elapsedMs: number }> {
  let calls = 0;
  let next = first;
  const startedMs = performance.now();
  const deadline = startedMs + durationMs;
  await Promise.all(
    Array.from({ length: CALLERS }, async () => {
      while (performance.now() < deadline) {
        await decide(`k${next++ % KEYS}`);
        calls++;
      }
    }),
  );
  return { calls, elapsedMs: performance.now() - startedMs };
}

async function main(): Promise<void> {
  const redis = await startBenchRedis();
  const admin = new Redis(redis.url);
  const all = await contenders(redis.url);
  try {
    const tallies = new Map<string, Tally>(all.map((one) => [one.label, { calls: 0, elapsedMs: 0, redisUs: 0, nodeCpuUs: 0 }]));
    for (const one of all) await turn(one.decide, WARM_UP_MS, 0);
    let first = 0;
    for (let round = 0; round < TURNS; round++) {
      // Each round starts with the next contender: none always follows the same one.
      const order = all.map((_, i) => all[(i + round) % all.length]!);
      for (const one of order) {
        await resetRedisStats(admin);
        const cpu = process.cpuUsage();
        const { calls, elapsedMs } = await turn(one.decide, TURN_MS, first);
        const used = process.cpuUsage(cpu);
        const tally = tallies.get(one.label)!;
        tally.calls += calls;
        tally.elapsedMs += elapsedMs;
        tally.nodeCpuUs += used.user + used.system;
        tally.redisUs += await redisUsec(admin);
        first += calls;
      }
    }
    const stackRow = tallies.get(all[0]!.label)!;
    const rate = (tally: Tally) => (tally.calls / tally.elapsedMs) * 1000;
    const rows = [
      "| path | decisions/s | Redis µs/decision | Node CPU µs/decision (load generator included) | decisions/s vs stack.lua | Redis time vs stack.lua |",
      "| --- | ---: | ---: | ---: | ---: | ---: |",
      ...all.map(({ label }) => {
        const tally = tallies.get(label)!;
        const redisUs = tally.redisUs / tally.calls;
        return `| ${label} | ${Math.round(rate(tally)).toLocaleString("en-US")} | ${redisUs.toFixed(1)} | ${(tally.nodeCpuUs / tally.calls).toFixed(1)} | ${(rate(tally) / rate(stackRow)).toFixed(2)} | ${(redisUs / (stackRow.redisUs / stackRow.calls)).toFixed(2)} |`;
      }),
    ];
    const markdown = [
      `\`npm run bench:redis-stacks\` (scripts/bench/redis-stacks.ts), Node ${process.version}, against ${redis.description}: two fixed windows (1 s and 1 min) per decision, limits no call reaches, ${KEYS.toLocaleString("en-US")} keys round robin, ${CALLERS} callers in a closed loop, each path on its own connection; ${TURNS} turns of ${TURN_MS} ms per path after a ${WARM_UP_MS / 1000} s warm-up, the paths taking turns.`,
      "Redis µs is Redis's own time (INFO commandstats: the scripts, or every command where no script ran). The reference's commands and rate-limiter-flexible's two limiters count each window on its own: not all-or-nothing.",
      "",
      ...rows,
    ].join("\n");
    console.log(markdown);
    if (process.env.BENCH_QUICK !== "1") await writeBenchmarkSection("Redis stacks (bench:redis-stacks)", markdown);
  } finally {
    for (const one of all) await one.close();
    admin.disconnect();
    await redis.stop();
  }
}

await main();
