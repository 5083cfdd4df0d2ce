import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Policy } from "../../src/core/types.js";
import { StoreUnavailableError } from "../../src/core/limiter.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { freePort } from "../../scripts/free-port.js";
import { type RedisServer, startRedis } from "../../scripts/redis-server.js";

const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };

/** What plain JavaScript can hand a store: the types say Policy, the value says otherwise. */
function unchecked(...values: unknown[]): Policy[] {
  return values as Policy[];
}

// What a user writes from the README: a store, then a call, with no ready() in between, and
// policies as written in a config.
describe("RedisStore takes what users write", () => {
  let server: RedisServer;
  const stores: RedisStore[] = [];
  const store = (options: ConstructorParameters<typeof RedisStore>[0]) => {
    // The first call waits for the connection up to the call timeout: 50 ms by default, less
    // than a connect (TCP, then INFO) can take on a loaded machine.
    const created = new RedisStore({ log: () => {}, timeoutMs: 2000, ...options });
    stores.push(created);
    return created;
  };

  beforeAll(async () => {
    server = await startRedis();
  });

  afterAll(async () => {
    await Promise.all(stores.map((created) => created.close()));
    await server?.stop();
  });

  it("the first call waits for the connection instead of failing", async () => {
    const limiter = store({ url: server.url, keyPrefix: "first-call:" });
    const policy = unchecked({ name: "per-minute", limit: 5, period: "1m" });
    const decisions = await Promise.all([1, 2, 3].map(() => limiter.check("user", policy, reject)));
    expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, true]);
  });

  it("a policy written as in a config is limited: 2 of 20 admitted with limit 2", async () => {
    const limiter = store({ url: server.url, keyPrefix: "written:" });
    let admitted = 0;
    for (let i = 0; i < 20; i++) if ((await limiter.check("user", unchecked({ name: "per-minute", limit: 2, period: "1m" }), reject)).allowed) admitted++;
    expect(admitted).toBe(2);
    const stack = unchecked({ name: "burst", limit: 1, period: "1s" }, { name: "uploads", algorithm: "concurrency", limit: 1, lease: "5s" });
    const first = await limiter.acquire("stacked", stack, { maxWaitMs: 0 });
    expect(first.acquired).toBe(true);
    if (first.acquired) expect(await limiter.release("stacked", stack, first.leaseId)).toEqual({ released: true });
  });

  it("garbage is a TypeError naming the field at every entry point, never a Lua error or an admission", async () => {
    const limiter = store({ url: server.url, keyPrefix: "garbage:" });
    const garbage = unchecked({ name: "g", algorithm: "gcra", limit: 2, periodMs: "1m", burst: 2, leaseMs: 1000, failMode: "open" });
    const calls = [
      () => limiter.check("k", garbage, reject),
      () => limiter.peek("k", garbage),
      () => limiter.reset("k", garbage),
      () => limiter.acquire("k", garbage, { maxWaitMs: 0 }),
      () => limiter.release("k", garbage, "lease"),
      () => limiter.extend("k", garbage, "lease"),
    ];
    for (const call of calls) {
      const error = await call().then(
        () => undefined,
        (thrown: unknown) => thrown,
      );
      expect(error).toBeInstanceOf(TypeError);
      expect((error as Error).message).toMatch(/^policies\.0\.periodMs: must be a whole number of ms/);
    }
  });

  it("with nothing listening, the first call still ends: StoreUnavailableError, so failMode decides", async () => {
    const limiter = store({ url: `redis://127.0.0.1:${await freePort()}`, keyPrefix: "nobody:", timeoutMs: 50 });
    await expect(limiter.check("user", unchecked({ name: "per-minute", limit: 2, period: "1m" }), reject)).rejects.toBeInstanceOf(StoreUnavailableError);
  });
});
