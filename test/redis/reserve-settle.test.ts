import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { Decision, Policy } from "../../src/core/types.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { redisAdapter } from "../conformance/redis-adapter.js";
import { BASE_MS, type ConformanceAdapter, coreAdapter } from "../conformance/scenarios.js";
import { type RedisServer, connectRedis, disconnectRedis } from "../../scripts/redis-server.js";
import { expectStoredAlike } from "./stored-alike.js";
import { throttleReserveCases } from "../unit/client/throttle-reserve-cases.js";

// Reserve, then settle on Redis: random traces of reservations (a check at cost = estimate) and
// their settles (a debit of actual − estimate, a refund when negative, spent at the
// reservation's time) through the core and through Redis, which must answer alike and store
// alike; and the client's Throttle.reserve on a RedisStore on Redis's own clock.

const LABELS = ["p0", "p1"];

const policyInput = (name: string) =>
  fc.oneof(
    fc.record({ name: fc.constant(name), algorithm: fc.constantFrom("gcra", "token-bucket"), limit: fc.integer({ min: 2, max: 20 }), period: fc.constantFrom(100, 250, 1000, 3000), burst: fc.integer({ min: 4, max: 24 }) }),
    fc.record({ name: fc.constant(name), algorithm: fc.constantFrom("fixed-window", "sliding-window", "sliding-log"), limit: fc.integer({ min: 4, max: 24 }), period: fc.constantFrom(100, 250, 1000, 3000) }),
    fc.record({ name: fc.constant(name), algorithm: fc.constant("credits"), limit: fc.integer({ min: 4, max: 40 }) }),
  );

const stepInput = fc.record({
  gapMs: fc.constantFrom(0, 0, 1, 50, 99, 100, 250, 333, 1000, 2500),
  op: fc.constantFrom("reserve", "reserve", "settle", "settle", "peek"),
  use: fc.option(fc.subarray(LABELS, { minLength: 1 }), { nil: undefined }),
  key: fc.constantFrom("k", "k", "k", "other"),
  estimate: fc.integer({ min: 1, max: 12 }),
  // What the request used: often less than its estimate, sometimes more, sometimes nothing.
  actual: fc.oneof(fc.integer({ min: 0, max: 12 }), fc.constant(0)),
  // Often the oldest reservation: one settled after its window turned is the case that matters.
  pick: fc.oneof(fc.constant(0), fc.nat()),
});

const traceInput = fc.record({
  count: fc.integer({ min: 1, max: 2 }),
  policies: fc.tuple(policyInput("p0"), policyInput("p1")),
  steps: fc.array(stepInput, { minLength: 4, maxLength: 30 }),
});

type Trace = typeof traceInput extends fc.Arbitrary<infer T> ? T : never;
interface Held {
  key: string;
  policies: Policy[];
  estimate: number;
  atMs: number;
}

/** Runs a trace on one store: each settle takes a reservation this store admitted, so the stores' answers decide the trace alike. */
async function runTrace(trace: Trace, adapter: ConformanceAdapter, keyPrefix: string): Promise<unknown[]> {
  const labels = LABELS.slice(0, trace.count);
  const stackOf = (use: string[] | undefined) => (use?.filter((label) => labels.includes(label)).length ? use.filter((label) => labels.includes(label)) : labels).map((label) => parsePolicy(trace.policies[LABELS.indexOf(label)]!, label));
  const held: Held[] = [];
  const answers: unknown[] = [];
  let nowMs = BASE_MS;
  for (const step of trace.steps) {
    nowMs += step.gapMs;
    const key = `${keyPrefix}${step.key}`;
    let answer: Decision;
    if (step.op === "reserve") {
      const policies = stackOf(step.use);
      answer = await adapter.check(key, policies, { cost: step.estimate, mode: "reject", maxWaitMs: 0 }, nowMs);
      if (answer.allowed) held.push({ key, policies, estimate: step.estimate, atMs: nowMs });
    } else if (step.op === "settle" && held.length > 0) {
      const [reservation] = held.splice(step.pick % held.length, 1);
      const difference = step.actual - reservation!.estimate;
      answer = difference === 0 ? await adapter.peek(reservation!.key, reservation!.policies, nowMs) : await adapter.debit(reservation!.key, reservation!.policies, difference, nowMs, reservation!.atMs);
    } else {
      answer = await adapter.peek(key, stackOf(step.use), nowMs);
    }
    answers.push(JSON.parse(JSON.stringify(answer)));
  }
  return answers;
}

describe("reserve, then settle on Redis", () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    ({ server, client } = await connectRedis());
  });

  afterAll(() => disconnectRedis(server, client));

  it("random traces of reservations and settles: the core and Redis answer and store alike", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(traceInput, async (trace) => {
        const prefix = `reserve-diff${run++}:`;
        const core = coreAdapter();
        const expected = await runTrace(trace, core, "");
        expect(await runTrace(trace, redisAdapter(client, prefix), "")).toEqual(expected);
        await expectStoredAlike(client, prefix, core, ["k", "other"], trace.policies.slice(0, trace.count), (index) => LABELS[index]!);
      }),
      { numRuns: Number(process.env.SPILLWAY_RESERVE_DIFFERENTIAL_RUNS ?? 60) },
    );
  });

  it("Throttle.reserve and settle on a RedisStore on Redis's clock", async () => {
    const store = new RedisStore({ client, keyPrefix: "reserve-throttle:", log: () => {} });
    await throttleReserveCases(store, "redis");
  });
});
