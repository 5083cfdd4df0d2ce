import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { KeyState } from "../../src/core/key-state.js";
import { parsePolicy } from "../../src/core/policy.js";
import type { CheckOptions } from "../../src/core/types.js";
import { StoreFaultError } from "../../src/core/limiter.js";
import { decodeStoredState } from "../../src/stores/redis/codec.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { keyLayout } from "../../src/stores/redis/keys.js";
import { type RedisServer, connectRedis, disconnectRedis } from "../../scripts/redis-server.js";

// single.lua's sliding-log step reads the usual state (whole bucket ends, sorted) in one pass
// and takes anything else the long way, on tables. The random traces of differential.test.ts
// only make usual states; these are states an earlier Spillway wrote (one entry per
// admission time, ends off the bucket grid, fractional times from a client clock), which
// Redis must decide exactly as the core does, and store the same state.

const stateArb = fc.array(fc.record({ untilMs: fc.oneof(fc.integer({ min: 1, max: 3000 }), fc.double({ min: 1, max: 3000, noNaN: true })), cost: fc.integer({ min: 1, max: 3 }) }), { minLength: 1, maxLength: 8 });

const checkArb = fc.record({
  gapMs: fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 1200 }), fc.double({ min: 0, max: 50, noNaN: true })),
  cost: fc.integer({ min: 0, max: 4 }),
  reserve: fc.boolean(),
  maxWaitMs: fc.constantFrom(0, 10, 500, 3000),
});

const caseArb = fc.record({
  limit: fc.integer({ min: 1, max: 8 }),
  periodMs: fc.constantFrom(7, 100, 1000, 3000),
  entries: stateArb,
  checks: fc.array(checkArb, { minLength: 1, maxLength: 6 }),
});

/** The text an earlier Spillway stored: entries sorted by end, numbers as %d or %.17g. */
function oldText(entries: readonly { untilMs: number; cost: number }[]): string {
  const sorted = [...entries].sort((a, b) => a.untilMs - b.untilMs);
  return `l:${sorted.map(({ untilMs, cost }) => `${Number.isInteger(untilMs) ? untilMs : untilMs.toPrecision(17)},${cost},`).join(";")}`;
}

describe("sliding-log: states written before buckets, on Redis and in the core", () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    ({ server, client } = await connectRedis());
  });

  afterAll(() => disconnectRedis(server, client));

  it("decide alike and leave the same state", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(caseArb, async ({ limit, periodMs, entries, checks }) => {
        const policy = parsePolicy({ name: "p", algorithm: "sliding-log", limit, period: periodMs }, "policy");
        const prefix = `old-log${run++}:`;
        const stateKey = keyLayout(prefix, "k").stateKey("p");
        const raw = oldText(entries);
        await client.set(stateKey, raw, "PX", 60_000);
        const core = new KeyState([["p", decodeStoredState(raw)]]);
        let nowMs = 0;
        const store = new RedisStore({ client, keyPrefix: prefix, clock: "client", clockMs: () => nowMs, timeoutMs: 2000 });
        for (const check of checks) {
          nowMs += check.gapMs;
          const options: CheckOptions = { cost: check.cost, mode: check.reserve ? "reserve" : "reject", maxWaitMs: check.maxWaitMs };
          const expected = core.check([policy], nowMs, options).decision;
          expect(await store.check("k", [policy], options)).toEqual(expected);
          const stored = await client.get(stateKey);
          expect(stored === null ? undefined : decodeStoredState(stored)).toEqual(core.states.get("p"));
        }
      }),
      { numRuns: 150 },
    );
  });

  it("an unreadable state is a StoreFaultError, also for a cost that could never fit", async () => {
    const policy = parsePolicy({ name: "p", algorithm: "sliding-log", limit: 3, period: "1s" }, "policy");
    const store = new RedisStore({ client, keyPrefix: "corrupt-log:" });
    for (const value of ["l:x", "l:1000,y,", "l:1000;"]) {
      await client.set(keyLayout("corrupt-log:", "k").stateKey("p"), value);
      for (const cost of [1, 4]) {
        await expect(store.check("k", [policy], { cost, mode: "reject", maxWaitMs: 0 }), `${value} cost ${cost}`).rejects.toBeInstanceOf(StoreFaultError);
      }
    }
  });
});
