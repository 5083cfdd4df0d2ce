import fc from "fast-check";
import type { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parsePolicy } from "../../src/core/policy.js";
import type { CheckMode, Decision, Policy } from "../../src/core/types.js";
import { RedisStore } from "../../src/stores/redis/store.js";
import { redisAdapter } from "../conformance/redis-adapter.js";
import { BASE_MS, type ConformanceAdapter, coreAdapter } from "../conformance/scenarios.js";
import { type RedisServer, connectRedis, disconnectRedis } from "../../scripts/redis-server.js";
import { expectStoredAlike } from "./stored-alike.js";

// Costs per policy on Redis (CheckOptions.costs, a debit's cost list): random traces of checks
// that charge each policy of a stack its own cost (0 peeks it), reject or reserve, of their
// settles (each policy's actual − reserved, refunds spent at the check's time) and of plain
// per-policy debits, through the core and through Redis (check.lua, debit.lua), which must
// answer alike and store alike.

const LABELS = ["p0", "p1", "p2"];

const policyInput = (name: string) =>
  fc.oneof(
    fc.record({ name: fc.constant(name), algorithm: fc.constantFrom("gcra", "token-bucket"), limit: fc.integer({ min: 2, max: 20 }), period: fc.constantFrom(100, 250, 1000, 3000), burst: fc.integer({ min: 4, max: 24 }) }),
    fc.record({ name: fc.constant(name), algorithm: fc.constantFrom("fixed-window", "sliding-window", "sliding-log"), limit: fc.integer({ min: 4, max: 24 }), period: fc.constantFrom(100, 250, 1000, 3000) }),
    fc.record({ name: fc.constant(name), algorithm: fc.constantFrom("gcra", "fixed-window"), limit: fc.integer({ min: 2, max: 12 }), period: fc.constantFrom(250, 1000), block: fc.constant("1s") }),
    fc.record({ name: fc.constant(name), algorithm: fc.constant("credits"), limit: fc.integer({ min: 4, max: 40 }) }),
  );

const costOf = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 12 }));

const stepInput = fc.record({
  gapMs: fc.constantFrom(0, 0, 1, 50, 99, 100, 250, 333, 1000, 2500),
  op: fc.constantFrom("check", "check", "check", "settle", "settle", "debit", "peek"),
  use: fc.option(fc.subarray(LABELS, { minLength: 1 }), { nil: undefined }),
  key: fc.constantFrom("k", "k", "k", "other"),
  costs: fc.tuple(costOf, costOf, costOf),
  mode: fc.constantFrom<CheckMode>("reject", "reject", "reserve"),
  maxWaitMs: fc.constantFrom(0, 100, 1000),
  // What each policy's measure came to: often less than reserved, sometimes more, sometimes nothing.
  actual: fc.tuple(fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 }), fc.integer({ min: 0, max: 12 })),
  debits: fc.tuple(fc.integer({ min: -6, max: 12 }), fc.integer({ min: -6, max: 12 }), fc.integer({ min: -6, max: 12 })),
  pick: fc.oneof(fc.constant(0), fc.nat()),
});

const traceInput = fc.record({
  policies: fc.tuple(policyInput("p0"), policyInput("p1"), policyInput("p2")),
  steps: fc.array(stepInput, { minLength: 4, maxLength: 30 }),
});

type Trace = typeof traceInput extends fc.Arbitrary<infer T> ? T : never;
interface Held {
  key: string;
  policies: Policy[];
  costs: number[];
  atMs: number;
}

/** Runs a trace on one store: each settle takes a check this store admitted, so the stores' answers decide the trace alike. */
async function runTrace(trace: Trace, adapter: ConformanceAdapter, keyPrefix: string): Promise<unknown[]> {
  const labelsOf = (use: string[] | undefined) => (use && use.length > 0 ? use : LABELS);
  const stackOf = (labels: string[]) => labels.map((label) => parsePolicy(trace.policies[LABELS.indexOf(label)]!, label));
  const held: Held[] = [];
  const answers: unknown[] = [];
  let nowMs = BASE_MS;
  for (const step of trace.steps) {
    nowMs += step.gapMs;
    const key = `${keyPrefix}${step.key}`;
    const labels = labelsOf(step.use);
    const policies = stackOf(labels);
    const own = (values: readonly number[]) => labels.map((label) => values[LABELS.indexOf(label)]!);
    let answer: Decision;
    if (step.op === "check") {
      const costs = own(step.costs);
      answer = await adapter.check(key, policies, { cost: 1, mode: step.mode, maxWaitMs: step.maxWaitMs, costs }, nowMs);
      if (answer.allowed && costs.some((cost) => cost > 0)) held.push({ key, policies, costs, atMs: nowMs + answer.waitMs });
    } else if (step.op === "settle" && held.length > 0) {
      const [check] = held.splice(step.pick % held.length, 1);
      const actual = check!.policies.map((policy) => step.actual[LABELS.indexOf(policy.name)]!);
      const differences = actual.map((used, i) => used - check!.costs[i]!);
      answer = await adapter.debit(check!.key, check!.policies, differences, nowMs, check!.atMs);
    } else if (step.op === "debit") {
      answer = await adapter.debit(key, policies, own(step.debits), nowMs);
    } else {
      answer = await adapter.peek(key, policies, nowMs);
    }
    answers.push(JSON.parse(JSON.stringify(answer)));
  }
  return answers;
}

describe("costs per policy on Redis", () => {
  let server: RedisServer;
  let client: Redis;

  beforeAll(async () => {
    ({ server, client } = await connectRedis());
  });

  afterAll(() => disconnectRedis(server, client));

  it("random traces of checks with a cost per policy, their settles and per-policy debits: the core and Redis answer and store alike", async () => {
    let run = 0;
    await fc.assert(
      fc.asyncProperty(traceInput, async (trace) => {
        const prefix = `costs-diff${run++}:`;
        const core = coreAdapter();
        const expected = await runTrace(trace, core, "");
        expect(await runTrace(trace, redisAdapter(client, prefix), "")).toEqual(expected);
        await expectStoredAlike(client, prefix, core, ["k", "other"], trace.policies);
      }),
      { numRuns: Number(process.env.SPILLWAY_DIFFERENTIAL_RUNS ?? 60) },
    );
  });
  it("refuses costs that do not fit the stack with a ValidationError naming the field, and writes nothing", async () => {
    const store = new RedisStore({ client, keyPrefix: "costs-input:", log: () => {} });
    const stack = [parsePolicy({ name: "a", limit: 2, period: "1m" }, "a"), parsePolicy({ name: "b", limit: 2, period: "1m" }, "b")];
    const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
    await expect(store.check("k", stack, { ...reject, costs: [1, 2, 3] })).rejects.toMatchObject({ name: "ValidationError", field: "costs" });
    await expect(store.check("k", stack, { ...reject, costs: { a: 1 } })).rejects.toMatchObject({ name: "ValidationError", field: "costs" });
    await expect(store.debit("k", stack, [1, 1e10])).rejects.toMatchObject({ name: "ValidationError", field: "cost.1" });
    expect(await client.keys("costs-input:*")).toEqual([]);
    await store.close();
  });

  it("a burst of 500 checks at once, each its own cost per policy: exactly what the tightest policy holds is admitted, and its count is exact", async () => {
    const store = new RedisStore({ client, keyPrefix: "costs-burst:", log: () => {} });
    const stack = [
      parsePolicy({ name: "rpm", algorithm: "fixed-window", limit: 100, period: "1h" }, "rpm"),
      parsePolicy({ name: "itpm", algorithm: "fixed-window", limit: 200, period: "1h" }, "itpm"),
      parsePolicy({ name: "otpm", algorithm: "fixed-window", limit: 10, period: "1h" }, "otpm"),
    ];
    const reject = { cost: 1, mode: "reject" as const, maxWaitMs: 0 };
    // rpm charged 1, itpm 5 (a reservation), otpm peeked: itpm holds 40 such requests.
    const decisions = await Promise.all(Array.from({ length: 500 }, () => store.check("k", stack, { ...reject, costs: [1, 5, 0] })));
    expect(decisions.filter((decision) => decision.allowed)).toHaveLength(40);
    const after = await store.peek("k", stack);
    expect(after.policies.map((one) => one.remaining)).toEqual([60, 0, 10]);
    await store.close();
  });
});
