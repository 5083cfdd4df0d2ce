import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

/** 2026-03-28 12:00 UTC: Paris changes to summer time the next night (03-29 01:00 UTC), and March ends on 03-31 22:00 UTC (April 1 00:00 CEST). */
const PARIS_MARCH = Date.UTC(2026, 2, 28, 12);
/** 2026-03-08 00:00 UTC: New York's day of 23 hours (03-08 05:00 UTC to 03-09 04:00 UTC). */
const NEW_YORK_SPRING = Date.UTC(2026, 2, 8);
/** 2026-01-01 00:00 UTC, a Thursday: Tokyo's week runs from Monday 12-29 00:00 JST (12-28 15:00 UTC) to 01-05 00:00 JST (01-04 15:00 UTC). */
const NEW_YEAR = Date.UTC(2026, 0, 1);

/**
 * Calendar windows (SPEC §1 `calendar`, `timezone`): fixed windows that start at a zone's
 * midnight, Monday or first of the month, across a month end and offset changes; resetMs and
 * retryAfterMs run to the next boundary.
 */
export const CALENDAR_SCENARIOS: Scenario[] = [
  {
    name: "warnAt on a calendar month and a gcra stacked with it: the decision that reaches the share warns, and every one after, denials and peeks included, until the window ends",
    baseMs: PARIS_MARCH,
    policies: {
      m: { name: "m", algorithm: "fixed-window", limit: 5, calendar: "month", timezone: "Europe/Paris", warnAt: 0.6 },
      g: { name: "g", algorithm: "gcra", limit: 10, period: "1h", warnAt: 0.5 },
    },
    steps: [
      check(0, { use: ["m"], expect: { allowed: true, remaining: 4 } }),
      check(1, { use: ["m"], expect: { allowed: true, remaining: 3 } }),
      // 3 of 5 used: 60 %.
      check(2, { use: ["m"], expect: { allowed: true, remaining: 2, warning: true } }),
      peek(3, { use: ["m"], expect: { remaining: 2, warning: true } }),
      check(4, { use: ["m", "g"], cost: 2, expect: { allowed: true, remaining: 0, warning: true } }),
      check(5, { use: ["m", "g"], expect: { allowed: false, warning: true } }),
      // gcra alone: 4 of its burst of 10 used (2 by the stack), below its 50 %; the 5th warns.
      check(6, { use: ["g"], cost: 2, expect: { allowed: true, remaining: 6 } }),
      check(7, { use: ["g"], expect: { allowed: true, remaining: 5, warning: true } }),
      // April: a fresh window, no warning.
      check(3 * DAY + 10 * HOUR, { use: ["m"], expect: { allowed: true, remaining: 4 } }),
    ],
  },
  {
    name: "calendar month in Europe/Paris: across the change to summer time and the month end",
    baseMs: PARIS_MARCH,
    policies: { m: { name: "m", algorithm: "fixed-window", limit: 3, calendar: "month", timezone: "Europe/Paris" } },
    steps: [
      // March ends 03-31 22:00 UTC: 3 days 10 hours from the start.
      check(0, { cost: 2, expect: { allowed: true, remaining: 1, resetMs: 3 * DAY + 10 * HOUR } }),
      check(HOUR, { expect: { allowed: true, remaining: 0 } }),
      check(2 * HOUR, { expect: { allowed: false, retryAfterMs: 3 * DAY + 8 * HOUR } }),
      // After the change (03-29 01:00 UTC) it is still March: the same window.
      peek(DAY, { expect: { allowed: false, remaining: 0, resetMs: 2 * DAY + 10 * HOUR } }),
      check(3 * DAY + 10 * HOUR - 1, { expect: { allowed: false, retryAfterMs: 1 } }),
      // A reservation across the boundary lands in April.
      check(3 * DAY + 9 * HOUR, { mode: "reserve", maxWaitMs: HOUR, expect: { allowed: true, waitMs: HOUR } }),
      // April 1 00:00 CEST: April is 30 days long, and one of its 3 is taken.
      check(3 * DAY + 10 * HOUR, { expect: { allowed: true, remaining: 1, resetMs: 30 * DAY } }),
      check(3 * DAY + 10 * HOUR + 1, { expect: { allowed: true, remaining: 0 } }),
      check(4 * DAY, { expect: { allowed: false, retryAfterMs: 29 * DAY + 10 * HOUR } }),
    ],
  },
  {
    name: "calendar day in America/New_York: the 23-hour day of the change to daylight time",
    baseMs: NEW_YORK_SPRING,
    policies: { d: { name: "d", algorithm: "fixed-window", limit: 2, calendar: "day", timezone: "America/New_York" } },
    steps: [
      // 03-08 00:00 UTC is 03-07 19:00 EST: that day ends at 05:00 UTC.
      check(0, { expect: { allowed: true, remaining: 1, resetMs: 5 * HOUR } }),
      check(5 * HOUR, { expect: { allowed: true, remaining: 1, resetMs: 23 * HOUR } }),
      check(12 * HOUR, { expect: { allowed: true, remaining: 0, resetMs: 16 * HOUR } }),
      check(13 * HOUR, { expect: { allowed: false, retryAfterMs: 15 * HOUR } }),
      // 03-09 00:00 EDT is 04:00 UTC: the day after has 24 hours again.
      check(28 * HOUR, { expect: { allowed: true, remaining: 1, resetMs: 24 * HOUR } }),
    ],
  },
  {
    name: "calendar week in Asia/Tokyo: Monday 00:00 JST, across the new year",
    baseMs: NEW_YEAR,
    policies: { w: { name: "w", algorithm: "fixed-window", limit: 5, calendar: "week", timezone: "Asia/Tokyo" } },
    steps: [
      check(0, { cost: 5, expect: { allowed: true, remaining: 0, resetMs: 3 * DAY + 15 * HOUR } }),
      check(DAY, { expect: { allowed: false, retryAfterMs: 2 * DAY + 15 * HOUR } }),
      peek(3 * DAY + 15 * HOUR - 1, { expect: { allowed: false, retryAfterMs: 1 } }),
      check(3 * DAY + 15 * HOUR, { expect: { allowed: true, remaining: 4, resetMs: 7 * DAY } }),
    ],
  },
  {
    name: "calendar day, week and month in UTC, stacked (all-or-nothing, each to its own boundary)",
    // Wednesday 2026-04-29 18:00 UTC: the day ends in 6 h, the week (Monday 05-04) in 4 d 6 h, April in 1 d 6 h.
    baseMs: Date.UTC(2026, 3, 29, 18),
    policies: {
      day: { name: "day", algorithm: "fixed-window", limit: 2, calendar: "day" },
      week: { name: "week", algorithm: "fixed-window", limit: 3, calendar: "week", timezone: "UTC" },
      month: { name: "month", algorithm: "fixed-window", limit: 4, calendar: "month", timezone: "Etc/UTC" },
    },
    steps: [
      check(0, { expect: { allowed: true, remaining: 1 } }),
      check(HOUR, { expect: { allowed: true, remaining: 0 } }),
      check(2 * HOUR, { expect: { allowed: false, retryAfterMs: 4 * HOUR } }),
      check(6 * HOUR, { expect: { allowed: true, remaining: 0 } }),
      // The week is spent (3): the day's allowance waits for Monday.
      check(7 * HOUR, { expect: { allowed: false, retryAfterMs: 3 * DAY + 23 * HOUR } }),
      peek(4 * DAY + 6 * HOUR, { expect: { allowed: true } }),
      // May: the month restarted on 05-01, the week on 05-04.
      check(4 * DAY + 6 * HOUR, { cost: 2, expect: { allowed: true, remaining: 0 } }),
    ],
  },
  {
    name: "calendar day in Asia/Kolkata (UTC+05:30) and a redefinition from a period",
    baseMs: Date.UTC(2026, 5, 10, 18, 0),
    policies: {
      d: { name: "d", algorithm: "fixed-window", limit: 1, calendar: "day", timezone: "Asia/Kolkata" },
      p: { name: "d", algorithm: "fixed-window", limit: 1, period: "1h" },
    },
    steps: [
      // 18:00 UTC is 23:30 IST: the day ends in 30 minutes.
      check(0, { use: ["d"], expect: { allowed: true, remaining: 0, resetMs: 30 * 60_000 } }),
      check(1, { use: ["d"], expect: { allowed: false, retryAfterMs: 30 * 60_000 - 1 } }),
      // The name redefined with a period: the calendar state is another window's, so it is fresh there.
      check(2, { use: ["p"], expect: { allowed: true, remaining: 0 } }),
      check(30 * 60_000, { use: ["d"], expect: { allowed: true, remaining: 0, resetMs: DAY } }),
    ],
  },
];
