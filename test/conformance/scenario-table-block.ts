import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });
const debit = (atMs: number, cost: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "debit" as const, cost, ...extra });

/**
 * Policy `block` (SPEC §1): a denial by the policy keeps the key refused until the block ends,
 * even after the window refills; peeks report it and never start one; reset ends it.
 */
export const BLOCK_SCENARIOS: Scenario[] = [
  {
    name: "block: a denial starts it, the refilled window does not end it, retry counts it down",
    policies: { g: { name: "g", algorithm: "gcra", limit: 2, period: "1s", block: "10s" } },
    steps: [
      check(0), check(0, { expect: { allowed: true, remaining: 0 } }),
      check(0, { expect: { allowed: false, retryAfterMs: 10000, blockedMs: 10000, remaining: 0, resetMs: 10000 } }),
      check(1000, { expect: { allowed: false, retryAfterMs: 9000, blockedMs: 9000, remaining: 0 } }),
      check(1000, { cost: 0, expect: { allowed: false, blockedMs: 9000 } }),
      peek(5000, { expect: { allowed: false, retryAfterMs: 5000, blockedMs: 5000 } }),
      check(5000, { mode: "reserve", maxWaitMs: 4000, expect: { allowed: false } }),
      check(5000, { mode: "reserve", maxWaitMs: 5000, expect: { allowed: true, waitMs: 5000, blockedMs: 5000 } }),
      check(10000, { expect: { allowed: true, remaining: 0 } }),
      check(10000, { expect: { allowed: false, blockedMs: 10000 } }),
      { atMs: 10001, op: "reset" },
      check(10002, { expect: { allowed: true, remaining: 1 } }),
    ],
  },
  {
    name: "block: a peek reports but never starts one; a cost-0 check does",
    policies: { f: { name: "f", algorithm: "fixed-window", limit: 1, period: "1s", block: "5s" } },
    steps: [
      check(0),
      peek(1, { expect: { allowed: false, retryAfterMs: 999 } }),
      check(1000, { expect: { allowed: true } }),
      check(1500, { cost: 0, expect: { allowed: false, blockedMs: 5000, retryAfterMs: 5000 } }),
      check(2000, { expect: { allowed: false, retryAfterMs: 4500 } }),
      peek(6500, { expect: { allowed: true, remaining: 1, resetMs: 0 } }),
      // A cost above capacity can never pass: the caller's mistake, not a rate exceeded.
      check(6500, { cost: 2, expect: { allowed: false, retryAfterMs: null } }),
      check(6501, { expect: { allowed: true } }),
    ],
  },
  {
    name: "block: a rate policy stacked with a concurrency one blocks on an acquire's denial too",
    policies: {
      r: { name: "r", algorithm: "fixed-window", limit: 1, period: "1s", block: "5s" },
      c: { name: "c", algorithm: "concurrency", limit: 2, lease: "10s" },
    },
    steps: [
      { atMs: 0, op: "acquire", as: "first", expect: { acquired: true } },
      { atMs: 10, op: "acquire", expect: { acquired: false, retryAfterMs: 5000 } },
      check(1000, { use: ["r"], expect: { allowed: false, blockedMs: 4010 } }),
      { atMs: 1000, op: "release", lease: "first", expect: { released: true } },
      { atMs: 5010, op: "acquire", expect: { acquired: true } },
    ],
  },
  {
    name: "block: a debit that overdraws starts it, one within the limit does not",
    policies: { t: { name: "t", algorithm: "token-bucket", limit: 5, period: "1s", block: "1m" } },
    steps: [
      debit(0, 3, { expect: { allowed: true, remaining: 2 } }),
      debit(0, 3, { expect: { allowed: false, blockedMs: 60000, retryAfterMs: 60000 } }),
      debit(10, 1, { expect: { blockedMs: 59990 } }),
      check(30000, { expect: { allowed: false, retryAfterMs: 30000 } }),
      peek(60000, { expect: { allowed: true, remaining: 5 } }),
      debit(60000, 500, { expect: { allowed: false, blockedMs: 60000, retryAfterMs: 100000 } }),
      // The block is over, the debt (495 tokens at 5 per second) is not.
      peek(120000, { expect: { allowed: false, retryAfterMs: 40000 } }),
      // A denial by the debt starts the next block, which a reservation then waits out.
      check(120000, { expect: { allowed: false, retryAfterMs: 60000, blockedMs: 60000 } }),
      check(120001, { mode: "reserve", maxWaitMs: 100000, expect: { allowed: true, waitMs: 59999 } }),
    ],
  },
  {
    name: "block: in a stack only the policy that refused is blocked",
    policies: {
      w: { name: "w", algorithm: "sliding-window", limit: 2, period: "1s", block: "30s" },
      l: { name: "l", algorithm: "sliding-log", limit: 3, period: "1m", block: "2m" },
    },
    steps: [
      check(0), check(0),
      check(0, { expect: { allowed: false, policy: "w", blockedMs: 30000 } }),
      check(10, { use: ["l"], expect: { allowed: true, remaining: 0 } }),
      check(20, { use: ["l"], expect: { allowed: false, blockedMs: 120000 } }),
      check(1000, { expect: { allowed: false, policy: "l", retryAfterMs: 119020 } }),
      peek(30000, { use: ["w"], expect: { allowed: true, remaining: 2 } }),
      peek(119999, { use: ["l"], expect: { allowed: false, retryAfterMs: 21 } }),
      check(120020, { expect: { allowed: true } }),
    ],
  },
  {
    name: "block: a policy redefined without block no longer sees one",
    policies: {
      before: { name: "p", algorithm: "fixed-window", limit: 1, period: "1s", block: "1h" },
      after: { name: "p", algorithm: "fixed-window", limit: 1, period: "1s" },
      again: { name: "p", algorithm: "fixed-window", limit: 1, period: "1s", block: "1h" },
    },
    steps: [
      check(0, { use: ["before"] }),
      check(1, { use: ["before"], expect: { allowed: false, blockedMs: 3600000 } }),
      check(2000, { use: ["after"], expect: { allowed: true } }),
      check(2001, { use: ["after"], expect: { allowed: false, retryAfterMs: 999 } }),
      // Its admission stored the state without the block; a denial under the block starts a new one.
      check(2002, { use: ["again"], expect: { allowed: false, blockedMs: 3600000 } }),
    ],
  },
];
