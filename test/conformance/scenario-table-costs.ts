import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const debit = (atMs: number, cost: number | number[] | Record<string, number>, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost, ...extra });

/**
 * Costs per policy (CheckOptions.costs, a debit's cost list): one atomic decision for a stack
 * whose policies count different measures (an LLM route's requests, input and output tokens).
 * All-or-nothing as ever: one policy refusing its own cost leaves every policy as it was; a
 * policy peeked (cost 0) must admit a cost-1 request and consumes nothing; a debit debits,
 * refunds or leaves alone each policy by its own signed cost. `remaining` is each policy's.
 */
export const COSTS_SCENARIOS: Scenario[] = [
  {
    name: "costs: each policy is charged its own cost, all or nothing; a peeked policy consumes nothing",
    policies: {
      r: { name: "r", algorithm: "fixed-window", limit: 5, period: "1m" },
      i: { name: "i", algorithm: "token-bucket", limit: 100, period: "1m" },
      o: { name: "o", algorithm: "sliding-window", limit: 50, period: "1m" },
    },
    steps: [
      check(0, { costs: [1, 60, 0], expect: { allowed: true }, remaining: [4, 40, 50] }),
      // i refuses its 50: r's request and i's tokens stay unspent.
      check(1, { costs: [1, 50, 0], expect: { allowed: false, policy: "i" }, remaining: [4, 40, 50] }),
      peek(2, { expect: { allowed: true }, remaining: [4, 40, 50] }),
      // A settle of two measures in one debit: i's estimate was 20 too high, o is charged 30.
      debit(3, [0, -20, 30], { expect: { allowed: true }, remaining: [4, 60, 20] }),
      check(4, { costs: { r: 1, i: 0, o: 0 }, expect: { allowed: true }, remaining: [3, 60, 20] }),
      debit(5, [0, 0, 40], { expect: { allowed: false }, remaining: [3, 60, 0] }),
      // o, only peeked, is in debt: it refuses, and r and i consume nothing.
      check(6, { costs: [1, 10, 0], expect: { allowed: false, policy: "o" }, remaining: [3, 60, 0] }),
      // Every cost 0: a peek.
      check(7, { costs: [0, 0, 0], expect: { allowed: false }, remaining: [3, 60, 0] }),
      check(8, { use: ["r", "i"], costs: [2, 10], expect: { allowed: true }, remaining: [1, 50] }),
      // A stack of one: its one cost.
      check(9, { use: ["i"], costs: [50], expect: { allowed: true }, remaining: [0] }),
      check(10, { use: ["i"], costs: [1], expect: { allowed: false } }),
    ],
  },
  {
    name: "costs: reserve waits for the slot where every policy's own cost fits, a peeked one's included",
    policies: {
      a: { name: "a", algorithm: "gcra", limit: 1, period: "1s" },
      b: { name: "b", algorithm: "gcra", limit: 10, period: "1s" },
    },
    steps: [
      check(0, { costs: [1, 10], expect: { allowed: true }, remaining: [0, 0] }),
      // a (peeked) fits a cost-1 request at 1000, b its 5 at 500: the slot is 1000; a consumes nothing.
      check(0, { costs: [0, 5], mode: "reserve", maxWaitMs: 2000, expect: { allowed: true, waitMs: 1000 } }),
      peek(1000, { expect: { allowed: true }, remaining: [1, 5] }),
      check(1000, { costs: [1, 0], expect: { allowed: true }, remaining: [0, 5] }),
      check(1000, { costs: [0, 6], expect: { allowed: false }, remaining: [0, 5] }),
      check(1000, { costs: [0, 6], mode: "reserve", maxWaitMs: 500, expect: { allowed: false }, remaining: [0, 5] }),
    ],
  },
  {
    name: "costs: a peeked policy that refuses starts its block; a concurrency policy takes a lease only when charged",
    policies: {
      g: { name: "g", algorithm: "gcra", limit: 2, period: "1s", block: "10s" },
      c: { name: "c", algorithm: "concurrency", limit: 1 },
    },
    steps: [
      check(0, { costs: [2, 1], as: "L", expect: { allowed: true, leaseId: "lease:L" }, remaining: [0, 0] }),
      { atMs: 1, op: "release" as const, lease: "L", expect: { released: true } },
      check(2, { costs: [0, 1], expect: { allowed: false, blockedMs: 10000, leaseId: undefined } }),
      check(3000, { costs: [0, 1], expect: { allowed: false, blockedMs: 7002 } }),
      check(10002, { costs: [0, 1], as: "M", expect: { allowed: true, leaseId: "lease:M" }, remaining: [2, 0] }),
      check(10003, { costs: [1, 0], expect: { allowed: false, policy: "c" }, remaining: [2, 0] }),
      { atMs: 10004, op: "release" as const, lease: "M", expect: { released: true } },
      check(10005, { costs: [1, 0], expect: { allowed: true, leaseId: undefined }, remaining: [1, 1] }),
    ],
  },
  {
    name: "costs: a credits balance and a rate limit, each spent, refunded and debited its own amount",
    policies: {
      c: { name: "c", algorithm: "credits", limit: 100 },
      r: { name: "r", algorithm: "fixed-window", limit: 3, period: "1m" },
    },
    steps: [
      check(0, { costs: [40, 1], expect: { allowed: true }, remaining: [60, 2] }),
      check(1, { costs: [70, 1], expect: { allowed: false, retryAfterMs: null }, remaining: [60, 2] }),
      check(2, { costs: [0, 1], expect: { allowed: true }, remaining: [60, 1] }),
      debit(3, [-10, 0], { expect: { allowed: true }, remaining: [70, 1] }),
      debit(4, { c: 80, r: 0 }, { expect: { allowed: false }, remaining: [0, 1] }),
      check(5, { costs: [0, 1], expect: { allowed: false, retryAfterMs: null }, remaining: [0, 1] }),
      debit(6, { r: 2, c: 0 }, { expect: { allowed: false }, remaining: [0, 0] }),
    ],
  },
];
