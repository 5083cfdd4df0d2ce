import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const refund = (atMs: number, amount: number, spentAtMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost: -amount, spentAtMs, ...extra });

/**
 * Refunds that name when their units were spent (Limiter.debit's spentAtMs: a reservation
 * settled later, reserve then settle): the units go back to the window they were spent in, and
 * a bucket still never holds more than its burst.
 */
export const SPENT_AT_SCENARIOS: Scenario[] = [
  {
    name: "spent at: fixed-window gives back to the window it was spent in, nothing to a later one",
    policies: { f: { name: "f", algorithm: "fixed-window", limit: 4, period: "1s" } },
    steps: [
      check(900, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      // Settled in the next window: that window was never charged, nothing comes back.
      check(1000, { cost: 3, expect: { allowed: true, remaining: 1 } }),
      refund(1100, 3, 900, { expect: { allowed: true, remaining: 1 } }),
      // Spent in this window: back to it.
      refund(1200, 2, 1000, { expect: { allowed: true, remaining: 3 } }),
      check(1300, { cost: 3, expect: { allowed: true, remaining: 0 } }),
      check(1300, { expect: { allowed: false } }),
    ],
  },
  {
    name: "spent at: sliding-window gives back to the previous window's count",
    policies: { w: { name: "w", algorithm: "sliding-window", limit: 4, period: "1s" } },
    steps: [
      check(500, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      check(1000, { expect: { allowed: false } }),
      // Reserved at 500, settled at 1000 with 3 unused: the previous window's count 4 becomes 1.
      refund(1000, 3, 500, { expect: { allowed: true, remaining: 3 } }),
      peek(1500, { expect: { allowed: true, remaining: 3 } }),
      // Spent two windows ago: no count holds it any more, nothing changes.
      refund(2600, 1, 500),
      peek(2600, { expect: { allowed: true, remaining: 4 } }),
    ],
  },
  {
    name: "spent at: sliding-log takes from the bucket the units were logged in",
    policies: { l: { name: "l", algorithm: "sliding-log", limit: 4, period: "1s" } },
    steps: [
      check(0, { cost: 2 }),
      check(600, { cost: 2, expect: { allowed: true, remaining: 0 } }),
      // Spent at 0: the older entry gives back, the newer (ending at 1600) still counts.
      refund(700, 2, 0, { expect: { allowed: true, remaining: 2 } }),
      peek(1100, { expect: { allowed: true, remaining: 2 } }),
      check(1100, { cost: 2, expect: { allowed: true, remaining: 0 } }),
      check(1100, { expect: { allowed: false } }),
    ],
  },
  {
    name: "spent at: buckets never hold more than their burst",
    policies: { t: { name: "t", algorithm: "token-bucket", limit: 2, period: "1s", burst: 4 }, g: { name: "g", algorithm: "gcra", limit: 2, period: "1s", burst: 4 } },
    steps: [
      check(0, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      refund(1500, 4, 0, { expect: { allowed: true, remaining: 4 } }),
      check(1500, { cost: 4, expect: { allowed: true, remaining: 0 } }),
      check(1500, { expect: { allowed: false } }),
    ],
  },
  {
    name: "spent at: credits on a calendar refill give back only to the refill they were spent in",
    baseMs: Date.UTC(2026, 2, 9, 4) - 10_000,
    policies: { c: { name: "c", algorithm: "credits", limit: 10, refill: { calendar: "day", timezone: "America/New_York" } } },
    steps: [
      check(0, { cost: 8, expect: { allowed: true, remaining: 2 } }),
      check(20_000, { cost: 6, expect: { allowed: true, remaining: 4 } }),
      // Spent before midnight: the day after was refilled already, nothing comes back.
      refund(21_000, 5, 0, { expect: { allowed: true, remaining: 4 } }),
      refund(22_000, 5, 20_000, { expect: { allowed: true, remaining: 9 } }),
    ],
  },
];
