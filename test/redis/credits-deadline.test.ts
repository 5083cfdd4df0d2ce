import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "../../src/config/config.js";
import { type RunningServer, startServer } from "../../src/node/serve/server.js";
import { REDIS_CLIENT_OPTIONS, RedisStore } from "../../src/stores/redis/store.js";
import { runnerFor } from "../../src/stores/redis/run.js";
import { STORE_UNAVAILABLE_TYPE } from "../../src/core/wire.js";
import { type RedisServer, startRedis, startRedisCluster } from "../../scripts/redis-server.js";
import { StoreUnavailableError } from "../../src/core/limiter.js";

// A call answered 503 spent nothing (issue 45, attack 8): a spend, a top-up or a debit that
// Redis runs after its caller gave up (a CLIENT PAUSE, a SIGSTOP) carries a deadline in
// Redis's time and does nothing, through `spillway serve` with a 50 ms timeout, as Redis
// Functions and as EVALSHA scripts.
const TIMEOUT_MS = 50;
const config = parseConfig({
  policies: [
    { name: "tokens", algorithm: "credits", limit: 4000 },
    { name: "wide", algorithm: "gcra", limit: 1_000_000, period: "1h" },
  ],
});

let redis: RedisServer;
let admin: Redis;
beforeAll(async () => {
  // The 503s are logged as store-error lines on stdout, on purpose here: kept out of the output.
  vi.spyOn(console, "log").mockImplementation(() => {});
  redis = await startRedis();
  admin = new Redis(redis.url, { lazyConnect: true });
  await admin.connect();
  // A user that may not FCALL: its store runs the same Lua as EVALSHA scripts.
  await admin.acl("SETUSER", "no-functions", "on", "nopass", "~*", "&*", "+@all", "-fcall", "-function");
});
afterAll(async () => {
  vi.restoreAllMocks();
  admin?.disconnect();
  await redis?.stop();
});

interface Served {
  server: RunningServer;
  store: RedisStore;
  send(route: string, body: unknown): Promise<{ status: number; body: Record<string, unknown> }>;
  close(): Promise<void>;
}

async function serve(mode: "functions" | "scripts"): Promise<Served> {
  const client = new Redis(redis.url, { ...REDIS_CLIENT_OPTIONS, ...(mode === "scripts" ? { username: "no-functions" } : {}) });
  const store = new RedisStore({ client, timeoutMs: TIMEOUT_MS, log: () => {} });
  expect(await store.ready(10_000)).toBe(true);
  const server = await startServer({ config, limiter: store, port: 0, token: "secret" });
  const send = async (route: string, body: unknown) => {
    const response = await fetch(`${server.url}/v1/${route}`, { method: "POST", headers: { authorization: "Bearer secret", "content-type": "application/json" }, body: JSON.stringify(body) });
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };
  return {
    server,
    store,
    send,
    close: async () => {
      await server.close();
      await store.close();
      client.disconnect();
    },
  };
}

/** How many calls Redis refused as late so far (INFO errorstats counts replies by error code). */
async function lateRefusals(): Promise<number> {
  const info = await admin.info("errorstats");
  return Number(/errorstat_LATE:count=(\d+)/.exec(info)?.[1] ?? 0);
}

/** Every kind of call that spends or raises a balance, once Redis is stalled: each must answer 503. */
function stalledCalls(served: Served, key: string) {
  return [
    ...Array.from({ length: 20 }, () => served.send("check", { key, policy: "tokens", cost: 1 })), // single.lua
    ...Array.from({ length: 5 }, () => served.send("check", { key, policy: ["tokens", "wide"], cost: 2 })), // check.lua
    ...Array.from({ length: 5 }, () => served.send("check", { key, policy: "tokens", cost: 3, mode: "reserve", maxWaitMs: 1000 })),
    ...Array.from({ length: 5 }, () => served.send("check", { key, policy: "tokens", cost: 7, mode: "debit" })), // debit.lua
    ...Array.from({ length: 5 }, () => served.send("credits", { key, policy: "tokens", add: 100 })), // balance.lua
  ];
}
const STALLED_CALLS = 40;

describe.each(["functions", "scripts"] as const)("a call answered 503 spent nothing (%s)", (mode) => {
  let served: Served;
  beforeAll(async () => {
    served = await serve(mode);
  });
  afterAll(() => served?.close());

  it("CLIENT PAUSE: every call made during the pause is a 503, and Redis runs them after it without spending", async () => {
    const key = `paused-${mode}-${Date.now()}`;
    expect(await served.send("check", { key, policy: "tokens", cost: 1 })).toMatchObject({ status: 200, body: { remaining: 3999 } });
    expect(runnerFor(served.store.client).mode).toBe(mode);
    const lateBefore = await lateRefusals();
    await admin.call("CLIENT", "PAUSE", "2500", "ALL");
    const pausedAtMs = performance.now();
    const answers = await Promise.all(stalledCalls(served, key));
    // Every answer came while Redis was paused: none waited for it (a 50 ms timeout; the rest
    // is a loaded machine's turns).
    expect(performance.now() - pausedAtMs).toBeLessThan(2000);
    for (const answer of answers) expect(answer).toMatchObject({ status: 503, body: { type: STORE_UNAVAILABLE_TYPE } });
    // Redis runs the queued calls once the pause ends; each finds its deadline gone.
    await waitUntil(async () => (await lateRefusals()) - lateBefore >= STALLED_CALLS, 5000);
    expect((await lateRefusals()) - lateBefore).toBe(STALLED_CALLS);
    expect(await served.send("credits", { key, policy: "tokens", add: 0 })).toMatchObject({ status: 200, body: { remaining: 3999 } });
    // And the next calls act as usual.
    expect(await served.send("check", { key, policy: ["tokens", "wide"], cost: 9 })).toMatchObject({ status: 200, body: { policies: [{ remaining: 3990 }, {}] } });
    expect(await served.send("credits", { key, policy: "tokens", add: 10 })).toMatchObject({ status: 200, body: { remaining: 4000 } });
  });

  it("SIGSTOP: the same for a Redis that stops answering altogether", async () => {
    const key = `stopped-${mode}-${Date.now()}`;
    expect(await served.send("check", { key, policy: "tokens", cost: 10 })).toMatchObject({ status: 200, body: { remaining: 3990 } });
    const lateBefore = await lateRefusals();
    const pid = redis.process.pid!;
    process.kill(pid, "SIGSTOP");
    const resume = setTimeout(() => process.kill(pid, "SIGCONT"), 1000);
    let answers: { status: number; body: Record<string, unknown> }[];
    try {
      answers = await Promise.all(stalledCalls(served, key));
    } finally {
      clearTimeout(resume);
      process.kill(pid, "SIGCONT");
    }
    for (const answer of answers) expect(answer).toMatchObject({ status: 503, body: { type: STORE_UNAVAILABLE_TYPE } });
    await waitUntil(async () => (await lateRefusals()) - lateBefore >= STALLED_CALLS, 5000);
    expect(await served.send("credits", { key, policy: "tokens", add: 0 })).toMatchObject({ status: 200, body: { remaining: 3990 } });
  });

  it("a healthy Redis under a burst: every call in time acts, none refused as late", async () => {
    // Straight to the store: a burst of HTTP requests from this same process would measure this
    // process's own turns (the deadline counts from each call's write, not its request).
    const key = `burst-${mode}-${Date.now()}`;
    const tokens = config.catalog.get("tokens")!;
    const lateBefore = await lateRefusals();
    const results = await Promise.allSettled(Array.from({ length: 300 }, () => served.store.check(key, [tokens], { cost: 1, mode: "reject", maxWaitMs: 0 })));
    expect(results.filter((result) => result.status === "rejected")).toEqual([]);
    expect(await served.send("credits", { key, policy: "tokens", add: 0 })).toMatchObject({ body: { remaining: 3700 } });
    expect((await lateRefusals()) - lateBefore).toBe(0);
  });
});

describe("a call answered 503 spent nothing (Redis Cluster)", () => {
  it("each master's clock is its own: spends, debits and top-ups that paused masters run late do nothing", async () => {
    const cluster = await startRedisCluster(3);
    const store = new RedisStore({ clusterNodes: cluster.startupNodes, timeoutMs: TIMEOUT_MS, log: () => {} });
    try {
      expect(await store.ready(10_000)).toBe(true);
      const tokens = config.catalog.get("tokens")!;
      const keys = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"];
      for (const key of keys) expect((await store.check(key, [tokens], { cost: 1, mode: "reject", maxWaitMs: 0 })).remaining).toBe(3999);
      const admins = cluster.nodes.map((node) => new Redis(node.url));
      await Promise.all(admins.map((node) => node.call("CLIENT", "PAUSE", "1500", "ALL")));
      const calls = keys.flatMap((key) => [
        store.check(key, [tokens], { cost: 5, mode: "reject", maxWaitMs: 0 }),
        store.debit(key, [tokens], 7),
        store.credits(key, tokens, { add: 100 }),
      ]);
      const results = await Promise.allSettled(calls);
      for (const result of results) expect(result.status === "rejected" && result.reason instanceof StoreUnavailableError).toBe(true);
      const late = async () => {
        let count = 0;
        for (const node of admins) count += Number(/errorstat_LATE:count=(\d+)/.exec(await node.info("errorstats"))?.[1] ?? 0);
        return count;
      };
      await waitUntil(async () => (await late()) >= calls.length, 5000);
      expect(await late()).toBe(calls.length);
      for (const key of keys) expect(await store.credits(key, tokens, { add: 0 })).toEqual({ remaining: 3999 });
      for (const node of admins) node.disconnect();
    } finally {
      await store.close();
      await cluster.stop();
    }
  }, 30_000);
});

async function waitUntil(condition: () => Promise<boolean>, withinMs: number): Promise<void> {
  const untilMs = performance.now() + withinMs;
  while (!(await condition())) {
    if (performance.now() > untilMs) return;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
