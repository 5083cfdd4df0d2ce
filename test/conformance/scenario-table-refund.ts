import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const refund = (atMs: number, amount: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost: -amount, ...extra });

/**
 * Refunds (SPEC §2): a negative debit returns units to a key, by each algorithm's own rule:
 * never below the key's empty state, never above what it can hold, and a window's units only
 * to the window they were spent in. Answered as a peek after it, like a debit.
 */
export const REFUND_SCENARIOS: Scenario[] = [
  {
    name: "refund: gcra takes back its backlog, never past fresh",
    policies: { g: { name: "g", algorithm: "gcra", limit: 1, period: "1s", burst: 5 } },
    steps: [
      check(0, { cost: 5, expect: { allowed: true, remaining: 0, resetMs: 5000 } }),
      refund(0, 2, { expect: { allowed: true, remaining: 2, resetMs: 3000, retryAfterMs: 0 } }),
      check(0, { cost: 2, expect: { allowed: true, remaining: 0 } }),
      check(0, { expect: { allowed: false, retryAfterMs: 1000 } }),
      // More than the backlog: back to fresh, no further (burst 5, not 5 + the excess).
      refund(100, 50, { expect: { allowed: true, remaining: 5, resetMs: 0 } }),
      check(100, { cost: 5, expect: { allowed: true, remaining: 0 } }),
      check(100, { expect: { allowed: false } }),
    ],
  },
  {
    name: "refund: token-bucket refills to its burst at most",
    policies: { t: { name: "t", algorithm: "token-bucket", limit: 2, period: "1s", burst: 4 } },
    steps: [
      check(0, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      refund(10, 3, { expect: { allowed: true, remaining: 3 } }),
      // Refilled at 1000 (+2), then a refund of 9 stops at the burst.
      refund(1500, 9, { expect: { allowed: true, remaining: 4, resetMs: 0 } }),
      check(1500, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      check(1500, { expect: { allowed: false } }),
      // A refund on a key never seen changes nothing: it is full already.
      refund(1600, 2, { key: "other", expect: { allowed: true, remaining: 4 } }),
    ],
  },
  {
    name: "refund: fixed-window floors at 0 and never reaches an earlier window",
    policies: { f: { name: "f", algorithm: "fixed-window", limit: 3, period: "1s" } },
    steps: [
      check(0, { cost: 3, expect: { allowed: true, remaining: 0 } }),
      refund(100, 2, { expect: { allowed: true, remaining: 2, resetMs: 900 } }),
      refund(200, 10, { expect: { allowed: true, remaining: 3 } }),
      check(300, { cost: 3, expect: { allowed: true, remaining: 0 } }),
      check(300, { expect: { allowed: false, retryAfterMs: 700 } }),
      // Spent in [0, 1000), refunded in [1000, 2000): that window was never charged; nothing to return.
      refund(1000, 3, { expect: { allowed: true, remaining: 3 } }),
      check(1001, { cost: 3, expect: { allowed: true, remaining: 0 } }),
      check(1002, { expect: { allowed: false } }),
    ],
  },
  {
    name: "refund: fixed-window returns units to a future window a reservation holds",
    policies: { f: { name: "f", algorithm: "fixed-window", limit: 3, period: "1s" } },
    steps: [
      check(0, { cost: 3 }),
      check(10, { cost: 3, mode: "reserve", maxWaitMs: 2000, expect: { allowed: true, waitMs: 990 } }),
      refund(20, 2, { expect: { allowed: false } }),
      check(1000, { cost: 2, expect: { allowed: true, remaining: 0 } }),
      check(1000, { expect: { allowed: false } }),
    ],
  },
  {
    name: "refund: sliding-window takes from the current window's count",
    policies: { w: { name: "w", algorithm: "sliding-window", limit: 4, period: "1s" } },
    steps: [
      check(0, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      refund(100, 3, { expect: { allowed: true, remaining: 3 } }),
      refund(100, 9, { expect: { allowed: true, remaining: 4, resetMs: 0 } }),
      check(200, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      check(300, { expect: { allowed: false } }),
      // In the next window the count is the previous one's: a refund without a time goes to the current (empty) count.
      refund(1000, 4, { expect: { allowed: false, remaining: 0 } }),
      peek(1500, { expect: { allowed: true, remaining: 2 } }),
    ],
  },
  {
    name: "refund: sliding-log takes from its newest entries",
    policies: { l: { name: "l", algorithm: "sliding-log", limit: 3, period: "1s" } },
    steps: [
      check(0),
      check(500, { cost: 2, expect: { allowed: true, remaining: 0 } }),
      refund(600, 1, { expect: { allowed: true, remaining: 1, resetMs: 904 } }),
      // The newest entry (ends at 1504) gave one back; the rest of it and the first still count.
      check(600, { expect: { allowed: true, remaining: 0 } }),
      check(600, { expect: { allowed: false, retryAfterMs: 408 } }),
      refund(700, 10, { expect: { allowed: true, remaining: 3, resetMs: 0 } }),
      check(700, { cost: 3, expect: { allowed: true, remaining: 0 } }),
    ],
  },
  {
    name: "refund: credits come back to the balance, a fresh balance stays fresh",
    policies: { c: { name: "c", algorithm: "credits", limit: 10 } },
    steps: [
      check(0, { cost: 7, expect: { allowed: true, remaining: 3 } }),
      refund(1, 5, { expect: { allowed: true, remaining: 8 } }),
      check(2, { cost: 8, expect: { allowed: true, remaining: 0 } }),
      check(3, { expect: { allowed: false } }),
      refund(4, 10, { expect: { allowed: true, remaining: 10 } }),
      refund(5, 3, { key: "never-seen", expect: { allowed: true, remaining: 10 } }),
    ],
  },
  {
    name: "refund: a stack gives back to every policy, each by its own rule",
    policies: {
      g: { name: "g", algorithm: "gcra", limit: 10, period: "10s", burst: 3 },
      f: { name: "f", algorithm: "fixed-window", limit: 5, period: "1m" },
    },
    steps: [
      check(0, { cost: 3, expect: { allowed: true, remaining: 0 } }),
      check(0, { use: ["f"], cost: 2, expect: { allowed: true, remaining: 0 } }),
      refund(0, 2, { expect: { allowed: true, remaining: 2, policy: "g" } }),
      check(0, { cost: 2, expect: { allowed: true, remaining: 0 } }),
      check(0, { expect: { allowed: false } }),
    ],
  },
];
