import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const debit = (atMs: number, cost: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost, ...extra });
const refund = (atMs: number, amount: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost: -amount, ...extra });
const HOUR = 3_600_000;
/** One hour before February 2026 starts (UTC): a monthly window ends within the scenario. */
const JANUARY_END = Date.UTC(2026, 0, 31, 23);
const FEBRUARY_MS = 28 * 24 * HOUR;

/**
 * Money budgets (docs/counting.md, "Prices"): fixed-window and credits limits past 1e9, up to
 * 1e15 microdollars (src/core/policy.ts MAX_BUDGET_LIMIT). Every count here has 14 to 16 digits,
 * where a store that printed numbers the way Lua's tostring or cjson does (%.14g) would round
 * them: each must be exact to the unit, spent, debited and refunded, and the headers must print
 * them as plain integers (RateLimit's within RFC 8941's 15 digits).
 */
export const BUDGET_SCENARIOS: Scenario[] = [
  {
    name: "budget: $50,000 a month (fixed-window calendar, 5e13), exact to the microdollar",
    baseMs: JANUARY_END,
    policies: { u: { name: "usd", algorithm: "fixed-window", limit: 50_000_000_000_000, calendar: "month" } },
    steps: [
      check(0, {
        cost: 999_999_999,
        expect: { allowed: true, limit: 50_000_000_000_000, remaining: 49_999_000_000_001, resetMs: HOUR },
        headers: { "RateLimit-Policy": '"usd";q=50000000000000', RateLimit: '"usd";r=49999000000001;t=3600', "X-RateLimit-Limit": "50000000000000", "X-RateLimit-Remaining": "49999000000001", "X-RateLimit-Reset": "3600" },
      }),
      debit(1000, 1_000_000_000, { expect: { allowed: true, remaining: 49_998_000_000_001 } }),
      refund(2000, 123_456_789, { expect: { allowed: true, remaining: 49_998_123_456_790 } }),
      check(3000, { expect: { allowed: true, remaining: 49_998_123_456_789 } }),
      check(4000, { cost: 1_000_000_000, mode: "reserve", maxWaitMs: 10, expect: { allowed: true, waitMs: 0, remaining: 49_997_123_456_789 } }),
      peek(HOUR - 1, { expect: { allowed: true, remaining: 49_997_123_456_789, resetMs: 1 } }),
      // February: a fresh window of 5e13, to its end 28 days on.
      check(HOUR, { expect: { allowed: true, remaining: 49_999_999_999_999, resetMs: FEBRUARY_MS } }),
      // Spent in January, refunded in February: that window is gone, nothing to return.
      refund(HOUR + 1, 1_000_000_000, { spentAtMs: 0, expect: { remaining: 49_999_999_999_999 } }),
    ],
  },
  {
    name: "budget: 1e15 an hour (fixed-window at the cap), alone and stacked with a rate",
    policies: {
      w: { name: "w", algorithm: "fixed-window", limit: 1_000_000_000_000_000, period: "1h" },
      g: { name: "g", algorithm: "gcra", limit: 10, period: "1s" },
    },
    steps: [
      peek(0, {
        use: ["w"],
        expect: { allowed: true, remaining: 1_000_000_000_000_000, resetMs: 0 },
        // RateLimit's items are RFC 8941 integers (15 digits at most): 1e15 reads one short.
        headers: { "RateLimit-Policy": '"w";q=999999999999999;w=3600', RateLimit: '"w";r=999999999999999;t=0', "X-RateLimit-Limit": "1000000000000000", "X-RateLimit-Remaining": "1000000000000000", "X-RateLimit-Reset": "0" },
      }),
      check(0, { use: ["w"], expect: { allowed: true, remaining: 999_999_999_999_999, resetMs: HOUR } }),
      check(1, { use: ["w"], cost: 1_000_000_000, expect: { allowed: true, remaining: 999_998_999_999_999 } }),
      check(10, {
        cost: 7,
        expect: { allowed: true, policy: "g", remaining: 3 },
        headers: { "RateLimit-Policy": '"w";q=999999999999999;w=3600, "g";q=10;w=1', RateLimit: '"w";r=999998999999992;t=3600, "g";r=3;t=1', "X-RateLimit-Limit": "10", "X-RateLimit-Remaining": "3", "X-RateLimit-Reset": "1" },
      }),
      debit(20, 1_000_000_000, { expect: { allowed: false, policy: "g" } }),
      peek(30, { use: ["w"], expect: { remaining: 999_997_999_999_992 } }),
      refund(40, 5, { use: ["w"], expect: { remaining: 999_997_999_999_997 } }),
      refund(50, 1_000_000_000, { use: ["w"], expect: { remaining: 999_998_999_999_997 } }),
      check(HOUR, { use: ["w"], cost: 2, expect: { allowed: true, remaining: 999_999_999_999_998, resetMs: HOUR } }),
    ],
  },
  {
    name: "budget: credits of 1e15 refilled to 5e13 each month, at the balance cap",
    baseMs: JANUARY_END,
    policies: { c: { name: "c", algorithm: "credits", limit: 1_000_000_000_000_000, refill: { calendar: "month", to: 50_000_000_000_000 } } },
    steps: [
      check(0, { expect: { allowed: true, remaining: 999_999_999_999_999, resetMs: HOUR } }),
      { atMs: 1, op: "credits" as const, change: { add: 1 }, expect: { remaining: 1_000_000_000_000_000 } },
      { atMs: 2, op: "credits" as const, change: { add: 1 }, expect: { refused: "add" } },
      check(3, {
        cost: 1_000_000_000,
        expect: { allowed: true, remaining: 999_999_000_000_000 },
        headers: { "RateLimit-Policy": '"c";q=999999999999999', RateLimit: '"c";r=999999000000000;t=3600', "X-RateLimit-Limit": "1000000000000000", "X-RateLimit-Remaining": "999999000000000", "X-RateLimit-Reset": "3600" },
      }),
      refund(4, 999_999_999, { expect: { remaining: 999_999_999_999_999 } }),
      // A refund stops at the balance cap, 1e15.
      refund(5, 1_000_000_000, { expect: { remaining: 1_000_000_000_000_000 } }),
      { atMs: 6, op: "credits" as const, change: { set: 500_000_000 }, expect: { remaining: 500_000_000 } },
      check(7, { cost: 1_000_000_000, expect: { allowed: false, remaining: 500_000_000, retryAfterMs: HOUR - 7 } }),
      // February: back to refill.to (5e13), not limit.
      check(HOUR, { cost: 1_000_000_000, expect: { allowed: true, remaining: 49_999_000_000_000, resetMs: FEBRUARY_MS } }),
    ],
  },
];
