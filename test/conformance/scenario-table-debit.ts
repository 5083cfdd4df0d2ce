import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const debit = (atMs: number, cost: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost, ...extra });

/**
 * Debit (SPEC §2): cost consumed even past the limit, answered as a peek after it; later
 * requests wait the debt out, each algorithm its own way.
 */
export const DEBIT_SCENARIOS: Scenario[] = [
  {
    name: "debit: gcra moves its tat past the burst, and requests wait the debt out",
    policies: { g: { name: "g", algorithm: "gcra", limit: 1, period: "1s", burst: 5 } },
    steps: [
      debit(0, 3, { expect: { allowed: true, remaining: 2, resetMs: 3000, retryAfterMs: 0, waitMs: 0 } }),
      debit(0, 5, { expect: { allowed: false, remaining: 0, resetMs: 8000, retryAfterMs: 4000 } }),
      check(3999, { expect: { allowed: false, retryAfterMs: 1 } }),
      check(4000, { expect: { allowed: true, remaining: 0 } }),
      debit(4000, 0, { expect: { allowed: false, retryAfterMs: 1000 } }),
      peek(9000, { expect: { allowed: true, remaining: 5, resetMs: 0 } }),
      debit(9000, 1_000_000_000, { expect: { allowed: false } }),
      check(9001, { expect: { allowed: false } }),
    ],
  },
  {
    name: "debit: token-bucket goes negative and refills from there",
    policies: { t: { name: "t", algorithm: "token-bucket", limit: 2, period: "1s", burst: 4 } },
    steps: [
      debit(0, 10, { expect: { allowed: false, remaining: 0, retryAfterMs: 4000, resetMs: 5000 } }),
      check(3999, { expect: { allowed: false, retryAfterMs: 1 } }),
      check(4000, { expect: { allowed: true, remaining: 1 } }),
      check(4500, { cost: 3, mode: "reserve", maxWaitMs: 5000, expect: { allowed: true, waitMs: 500 } }),
      // A debit while a reservation waits for a refill: the debt queues behind it.
      debit(4600, 2, { expect: { allowed: false, remaining: 0 } }),
      check(6000, { expect: { allowed: false } }),
      peek(8000, { expect: { allowed: true } }),
    ],
  },
  {
    name: "debit: fixed-window counts past the limit until the window ends",
    policies: { f: { name: "f", algorithm: "fixed-window", limit: 3, period: "1s" } },
    steps: [
      check(0, { expect: { allowed: true, remaining: 2 } }),
      debit(10, 5, { expect: { allowed: false, remaining: 0, retryAfterMs: 990, resetMs: 990 } }),
      check(500, { expect: { allowed: false, retryAfterMs: 500 } }),
      check(1000, { expect: { allowed: true, remaining: 2 } }),
      check(1000, { cost: 2, mode: "reserve", maxWaitMs: 2000 }),
      check(1001, { cost: 2, mode: "reserve", maxWaitMs: 2000, expect: { allowed: true, waitMs: 999 } }),
      // The next window already holds a reservation: the debit counts there too.
      debit(1002, 2, { expect: { allowed: false } }),
      check(2000, { expect: { allowed: false } }),
      check(3000, { expect: { allowed: true } }),
    ],
  },
  {
    name: "debit: sliding-window debt decays through the next window",
    policies: { w: { name: "w", algorithm: "sliding-window", limit: 4, period: "1s" } },
    steps: [
      debit(0, 8, { expect: { allowed: false, remaining: 0, retryAfterMs: 1625, resetMs: 2000 } }),
      check(1624, { expect: { allowed: false } }),
      check(1625, { expect: { allowed: true } }),
      debit(1700, 3),
      peek(1800, { expect: { allowed: false } }),
      check(3000, { cost: 4, expect: { allowed: true, remaining: 0 } }),
    ],
  },
  {
    name: "debit: sliding-log records the entry in its bucket",
    policies: { l: { name: "l", algorithm: "sliding-log", limit: 3, period: "1s" } },
    steps: [
      check(0),
      debit(5, 5, { expect: { allowed: false, remaining: 0, retryAfterMs: 1003, resetMs: 1003 } }),
      debit(9, 2),
      check(1007, { expect: { allowed: false, retryAfterMs: 1 } }),
      check(1008, { expect: { allowed: true, remaining: 0 } }),
      check(1024, { cost: 2, expect: { allowed: true, remaining: 0 } }),
      debit(1500, 100_000),
      peek(2000, { expect: { allowed: false } }),
      peek(2520, { expect: { allowed: true, remaining: 3 } }),
    ],
  },
  {
    name: "debit: a stack is debited whole, each policy past its own limit",
    policies: {
      g: { name: "g", algorithm: "gcra", limit: 10, period: "10s", burst: 3 },
      f: { name: "f", algorithm: "fixed-window", limit: 5, period: "1m" },
    },
    steps: [
      debit(0, 4, { expect: { allowed: false, policy: "g", retryAfterMs: 2000 } }),
      check(2000, { expect: { allowed: true, remaining: 0 } }),
      debit(2000, 1, { use: ["f"], expect: { allowed: false, policy: "f", retryAfterMs: 58000 } }),
      check(5000, { use: ["g"], expect: { allowed: true } }),
      check(5000, { expect: { allowed: false, policy: "f" } }),
      { atMs: 5001, op: "reset" },
      check(5002, { expect: { allowed: true } }),
    ],
  },
];
