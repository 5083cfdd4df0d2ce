import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const debit = (atMs: number, cost: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost, ...extra });
const add = (atMs: number, amount: number, remaining: number) => ({ atMs, op: "credits" as const, change: { add: amount }, expect: { remaining } });
const set = (atMs: number, amount: number, remaining: number) => ({ atMs, op: "credits" as const, change: { set: amount }, expect: { remaining } });
const refusedAdd = (atMs: number, amount: number) => ({ atMs, op: "credits" as const, change: { add: amount }, expect: { refused: "add" } });
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/**
 * Credits (SPEC §1 `credits`): a balance that starts at `limit`, is spent all-or-nothing, and
 * is raised only by a credits change (add, set) or its refill.
 */
export const CREDITS_SCENARIOS: Scenario[] = [
  {
    name: "credits: start, spend, refuse, top up, set, debit below zero, never expire",
    policies: { c: { name: "c", algorithm: "credits", limit: 10 } },
    steps: [
      peek(0, { expect: { allowed: true, remaining: 10, resetMs: 0 } }),
      check(0, { cost: 4, expect: { allowed: true, remaining: 6, resetMs: 0 } }),
      // Nothing raises a balance without a refill but a top-up: never, so no retry time.
      check(1, { cost: 7, expect: { allowed: false, remaining: 6, retryAfterMs: null } }),
      check(2, { cost: 6, expect: { allowed: true, remaining: 0 } }),
      check(3, { expect: { allowed: false, retryAfterMs: null } }),
      add(4, 5, 5),
      check(5, { cost: 5, expect: { allowed: true, remaining: 0 } }),
      // Back at limit: the same as a key never seen (the state is dropped).
      set(6, 10, 10),
      set(7, 3, 3),
      debit(8, 5, { expect: { allowed: false, remaining: 0 } }),
      // The debt (-2) is repaid first.
      add(9, 1, 0),
      add(10, 3, 2),
      check(11, { cost: 3, expect: { allowed: false } }),
      // A year on, the balance is what it was: a spent balance never expires.
      peek(400 * DAY, { expect: { allowed: true, remaining: 2 } }),
      add(400 * DAY, 1_000_000_000, 1_000_000_002),
      check(400 * DAY, { cost: 1_000_000_000, expect: { allowed: true, remaining: 2 } }),
    ],
  },
  {
    name: "credits: a monthly refill in America/New_York, waiting for it in reserve mode",
    // 2026-01-31 12:00 UTC: January ends in New York at 02-01 05:00 UTC, February at 03-01 05:00 UTC.
    baseMs: Date.UTC(2026, 0, 31, 12),
    policies: { c: { name: "c", algorithm: "credits", limit: 100, refill: { calendar: "month", timezone: "America/New_York" } } },
    steps: [
      check(0, { cost: 60, expect: { allowed: true, remaining: 40, resetMs: 17 * HOUR } }),
      // The refill will cover it: retry at the boundary.
      check(1, { cost: 50, expect: { allowed: false, remaining: 40, retryAfterMs: 17 * HOUR - 1 } }),
      check(2, { cost: 101, expect: { allowed: false, retryAfterMs: null } }),
      add(3, 20, 60),
      check(4, { cost: 50, expect: { allowed: true, remaining: 10 } }),
      check(17 * HOUR - 1, { cost: 50, expect: { allowed: false, retryAfterMs: 1 } }),
      // February: back to 100 (the top-up does not carry over).
      check(17 * HOUR, { cost: 50, expect: { allowed: true, remaining: 50, resetMs: 28 * DAY } }),
      // 02-28 20:00 UTC: 60 does not fit in 50; the refill 9 hours on does, within the wait.
      check(28 * DAY + 8 * HOUR, { cost: 60, mode: "reserve", maxWaitMs: DAY, expect: { allowed: true, waitMs: 9 * HOUR } }),
      // March is held by the reservation until it starts.
      peek(28 * DAY + 9 * HOUR, { expect: { allowed: false, remaining: 0 } }),
      peek(28 * DAY + 17 * HOUR, { expect: { allowed: true, remaining: 40 } }),
      set(28 * DAY + 18 * HOUR, 7, 7),
      check(28 * DAY + 19 * HOUR, { cost: 8, expect: { allowed: false, retryAfterMs: 31 * DAY - 2 * HOUR - 1 * HOUR } }),
    ],
  },
  {
    name: "credits: stacked with a rate limit (all-or-nothing), a daily refill to a smaller amount",
    baseMs: Date.UTC(2026, 6, 1, 22),
    policies: {
      c: { name: "c", algorithm: "credits", limit: 10, refill: { calendar: "day", to: 5 } },
      r: { name: "r", algorithm: "fixed-window", limit: 3, period: "1s" },
    },
    steps: [
      check(0, { cost: 3, expect: { allowed: true, remaining: 0, policy: "r" } }),
      // The rate limit refuses: nothing is spent from the balance.
      check(1, { expect: { allowed: false } }),
      peek(1000, { use: ["c"], expect: { remaining: 7, resetMs: 2 * HOUR - 1000 } }),
      check(1000, { cost: 3, expect: { allowed: true } }),
      check(2000, { cost: 5, use: ["c"], expect: { allowed: false, remaining: 4, retryAfterMs: 2 * HOUR - 2000 } }),
      // The next day: 5, not 10; and 6 never fits the refill's 5.
      peek(2 * HOUR, { use: ["c"], expect: { allowed: true, remaining: 5, resetMs: DAY } }),
      check(2 * HOUR, { cost: 6, use: ["c"], expect: { allowed: false, retryAfterMs: null } }),
      add(2 * HOUR + 1, 2, 7),
      check(2 * HOUR + 2, { cost: 6, use: ["c"], expect: { allowed: true, remaining: 1 } }),
      // Days later (no state kept for nothing: refilled to 5, which is not the fresh 10).
      peek(30 * DAY, { use: ["c"], expect: { remaining: 5 } }),
    ],
  },
  {
    name: "credits: a reservation another policy pushes past the refill is refused when the refilled balance would not cover it",
    // 23:30 UTC: the hourly window and the day both end at 00:00.
    baseMs: Date.UTC(2026, 6, 1, 23, 30),
    policies: {
      c: { name: "c", algorithm: "credits", limit: 10, refill: { calendar: "day", to: 3 } },
      r: { name: "r", algorithm: "fixed-window", limit: 5, period: "1h" },
    },
    steps: [
      check(0, { cost: 5, expect: { allowed: true } }),
      // 5 fits now, but r's slot is 00:00, when the balance is back to 3: never below zero.
      check(1, { cost: 5, mode: "reserve", maxWaitMs: HOUR, expect: { allowed: false, retryAfterMs: null, policy: "c" } }),
      // 3 fits both then: reserved for 00:00, charged on the refilled balance.
      check(2, { cost: 3, mode: "reserve", maxWaitMs: HOUR, expect: { allowed: true, waitMs: 30 * 60_000 - 2 } }),
      peek(30 * 60_000, { use: ["c"], expect: { remaining: 0 } }),
      peek(30 * 60_000 + 1, { use: ["r"], expect: { allowed: true, remaining: 2 } }),
    ],
  },
  {
    name: "credits: a balance holds at most 1e15; an add that would cross it is refused and changes nothing",
    policies: { c: { name: "c", algorithm: "credits", limit: 10 } },
    steps: [
      set(0, 1e15, 1e15),
      refusedAdd(1, 1),
      add(2, 0, 1e15),
      check(3, { cost: 1, expect: { allowed: true, remaining: 1e15 - 1 } }),
      add(4, 1, 1e15),
      refusedAdd(5, 1e15),
      set(6, 5, 5),
      // From 5, an add of 1e15 crosses by 5: refused, the 5 kept.
      refusedAdd(7, 1e15),
      add(8, 1e15 - 5, 1e15),
      // A key never seen starts at its limit: 10 + 1e15 crosses too.
      { atMs: 9, key: "fresh", op: "credits", change: { add: 1e15 }, expect: { refused: "add" } },
      { atMs: 10, key: "fresh", op: "peek", expect: { remaining: 10 } },
    ],
  },
  {
    name: "credits: an add of 0 reads and writes nothing, whatever policy of that name it is given",
    // The same name with another limit (a redefined policy): the store judges "fresh, so drop
    // it" on a change only, so a read under another limit cannot drop a balance.
    policies: { c: { name: "c", algorithm: "credits", limit: 100 }, wide: { name: "c", algorithm: "credits", limit: 5000 } },
    steps: [
      set(0, 5000, 5000),
      { atMs: 1, op: "credits", use: ["wide"], change: { add: 0 }, expect: { remaining: 5000 } },
      peek(2, { use: ["c"], expect: { remaining: 5000 } }),
      check(3, { use: ["c"], cost: 4000, expect: { allowed: true, remaining: 1000 } }),
      // A set back to the limit is dropped (a key never seen): each definition reads its own limit.
      set(4, 100, 100),
      { atMs: 5, op: "credits", use: ["c"], change: { add: 0 }, expect: { remaining: 100 } },
      { atMs: 6, op: "credits", use: ["wide"], change: { add: 0 }, expect: { remaining: 5000 } },
    ],
  },
];
