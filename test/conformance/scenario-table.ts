import type { Scenario } from "./scenarios.js";

const check = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "check" as const, ...extra });
const peek = (atMs: number, extra: Record<string, unknown> = {}) => ({ atMs, op: "peek" as const, ...extra });

/** Every algorithm, costs, peeks, stacks, reserve, concurrency and expiry (README "Algorithms" and "HTTP API"). */
export const SCENARIOS: Scenario[] = [
  {
    name: "gcra: burst, denial, peek, recovery (limit 1/s, burst 5)",
    policies: { g: { name: "g", algorithm: "gcra", limit: 1, period: "1s", burst: 5 } },
    steps: [
      check(0, { cost: 6, expect: { allowed: false, retryAfterMs: null } }),
      check(0, { expect: { allowed: true, remaining: 4, resetMs: 1000 } }),
      check(0), check(0), check(0),
      check(0, { expect: { allowed: true, remaining: 0, resetMs: 5000 } }),
      check(0, { expect: { allowed: false, retryAfterMs: 1000, remaining: 0 } }),
      peek(999, { expect: { allowed: false, retryAfterMs: 1 } }),
      peek(3000, { expect: { allowed: true, remaining: 3 } }),
      check(3000, { cost: 3, expect: { allowed: true, remaining: 0 } }),
      check(3000, { expect: { allowed: false } }),
      check(4000, { expect: { allowed: true, remaining: 0 } }),
      check(20000, { expect: { allowed: true, remaining: 4, resetMs: 1000 } }),
    ],
  },
  {
    name: "gcra: fractional interval (3 per second) and reserve",
    policies: { g: { name: "g", algorithm: "gcra", limit: 3, period: 1000, burst: 2 } },
    steps: [
      check(0), check(0),
      check(0, { expect: { allowed: false, retryAfterMs: 334 } }),
      check(1, { mode: "reserve", maxWaitMs: 200, expect: { allowed: false } }),
      check(1, { mode: "reserve", maxWaitMs: 400, expect: { allowed: true, waitMs: 333 } }),
      check(2, { mode: "reserve", maxWaitMs: 1000, expect: { allowed: true, waitMs: 665 } }),
      peek(10, { expect: { allowed: false } }),
      check(333), check(334), check(500), check(666), check(667), check(1000), check(1333), check(1334),
      check(1500, { cost: 2 }), check(2500, { cost: 2 }), check(2501),
    ],
  },
  {
    name: "token-bucket: discrete refill, costs, reserve queues behind reservations",
    policies: { t: { name: "t", algorithm: "token-bucket", limit: 2, period: "1s", burst: 5 } },
    steps: [
      check(0, { cost: 6, expect: { allowed: false, retryAfterMs: null } }),
      check(0, { cost: 4, expect: { allowed: true, remaining: 1 } }),
      check(10, { cost: 2, expect: { allowed: false, retryAfterMs: 990 } }),
      peek(999, { expect: { allowed: true, remaining: 1 } }),
      check(1000, { cost: 2, expect: { allowed: true, remaining: 1 } }),
      check(1000, { cost: 3, mode: "reserve", maxWaitMs: 1000, expect: { allowed: true, waitMs: 1000 } }),
      check(1200, { expect: { allowed: false } }),
      check(1200, { mode: "reserve", maxWaitMs: 5000 }),
      peek(2000), check(2000), check(2999), check(3000), check(3000), check(3000),
      check(10000, { expect: { allowed: true, remaining: 4 } }),
    ],
  },
  {
    name: "fixed-window: aligned windows, boundary, reserve into the next window",
    policies: { f: { name: "f", algorithm: "fixed-window", limit: 3, period: "1s" } },
    steps: [
      check(0, { cost: 4, expect: { allowed: false, retryAfterMs: null } }),
      check(100, { cost: 2, expect: { allowed: true, remaining: 1, resetMs: 900 } }),
      check(200), check(300, { expect: { allowed: false, retryAfterMs: 700 } }),
      check(999, { mode: "reserve", maxWaitMs: 1, expect: { allowed: true, waitMs: 1 } }),
      peek(999, { expect: { allowed: false } }),
      check(1000, { expect: { allowed: true, remaining: 1 } }),
      check(1000, { cost: 2, expect: { allowed: false, retryAfterMs: 1000 } }),
      check(1500, { cost: 3, mode: "reserve", maxWaitMs: 600, expect: { allowed: true, waitMs: 500 } }),
      peek(1700, { expect: { allowed: false, remaining: 0 } }),
      check(2000, { expect: { allowed: false } }),
      check(3000, { expect: { allowed: true, remaining: 2 } }),
    ],
  },
  {
    name: "sliding-window: weighted previous window, fractional estimates",
    policies: { s: { name: "s", algorithm: "sliding-window", limit: 7, period: "1s" } },
    steps: [
      check(0, { cost: 8, expect: { allowed: false, retryAfterMs: null } }),
      check(500, { cost: 7, expect: { allowed: true, remaining: 0 } }),
      check(600, { expect: { allowed: false, retryAfterMs: 543 } }),
      check(1100, { expect: { allowed: false } }),
      peek(1143, { expect: { allowed: true } }),
      check(1143), check(1300), check(1300, { cost: 2 }),
      check(1400, { mode: "reserve", maxWaitMs: 500 }),
      check(1450, { cost: 3, mode: "reserve", maxWaitMs: 1000 }),
      peek(1999), check(2000), check(2333), check(2500, { cost: 4 }), check(2900),
      check(5000, { expect: { allowed: true, remaining: 6 } }),
    ],
  },
  {
    name: "sliding-log: half-open windows on 16 ms buckets, merges and reserve",
    // An admission at x counts until x + 1000 rounded up to a multiple of 16 (⌈1000 / 64⌉).
    policies: { l: { name: "l", algorithm: "sliding-log", limit: 3, period: "1s" } },
    steps: [
      check(0, { cost: 4, expect: { allowed: false, retryAfterMs: null } }),
      check(0), check(0), // until 1008, merged
      check(250, { expect: { allowed: true, remaining: 0, resetMs: 1014 } }), // until 1264
      check(1007, { expect: { allowed: false, retryAfterMs: 1 } }),
      check(1008, { cost: 2, expect: { allowed: true, remaining: 0 } }), // until 2016
      check(1100, { mode: "reserve", maxWaitMs: 200, expect: { allowed: true, waitMs: 164 } }), // at 1264, until 2272
      peek(1250, { expect: { allowed: false } }),
      check(2000, { cost: 3, mode: "reserve", maxWaitMs: 1000, expect: { allowed: true, waitMs: 272 } }),
      check(2400, { expect: { allowed: false } }),
      check(4000, { expect: { allowed: true, remaining: 2 } }),
    ],
  },
  {
    name: "concurrency: leases, release by id, expiry, extend",
    policies: { c: { name: "c", algorithm: "concurrency", limit: 2, lease: "1s" } },
    steps: [
      { atMs: 0, op: "acquire", as: "a", expect: { acquired: true, remaining: 1, leaseMs: 1000 } },
      { atMs: 100, op: "acquire", as: "b", leaseMs: 5000, expect: { acquired: true, remaining: 0, leaseMs: 5000 } },
      { atMs: 200, op: "acquire", expect: { acquired: false, retryAfterMs: 800 } },
      peek(200, { expect: { allowed: false, remaining: 0 } }),
      { atMs: 300, op: "release", lease: "nobody", expect: { released: false } },
      { atMs: 300, op: "release", lease: "a", expect: { released: true } },
      { atMs: 300, op: "release", lease: "a", expect: { released: false } },
      check(400, { as: "c", expect: { allowed: true, remaining: 0 } }),
      { atMs: 900, op: "extend", lease: "c", leaseMs: 2000, expect: { extended: true, leaseMs: 2000 } },
      { atMs: 900, op: "extend", lease: "a", expect: { extended: false, leaseMs: 1000 } },
      check(2000, { expect: { allowed: false } }),
      // Lease c ran out at 2900 without a release: its slot comes back by itself.
      check(2900, { as: "d", expect: { allowed: true } }),
      check(2900, { cost: 3, expect: { allowed: false, retryAfterMs: null } }),
      { atMs: 5100, op: "acquire", as: "e", expect: { acquired: true, remaining: 1 } },
      { atMs: 9000, op: "release", lease: "e", expect: { released: false } },
    ],
  },
  {
    name: "stacked: all-or-nothing, shared counters, most restrictive",
    policies: {
      burst: { name: "per-second", algorithm: "fixed-window", limit: 3, period: "1s" },
      steady: { name: "per-minute", algorithm: "gcra", limit: 5, period: "1m", burst: 3 },
    },
    steps: [
      check(0, { expect: { allowed: true, policy: "per-second", remaining: 2 } }),
      check(0, { cost: 2, expect: { allowed: true, policy: "per-second", remaining: 0, resetMs: 1000 } }),
      check(0, { expect: { allowed: false, policy: "per-minute", retryAfterMs: 12000 } }),
      // Checked alone, a policy sees the same counters as in the stack.
      check(100, { use: ["steady"], expect: { allowed: false, remaining: 0 } }),
      check(1000, { use: ["burst"], expect: { allowed: true, remaining: 2 } }),
      // Denied by the minute policy: the second policy's window must not be consumed.
      check(1001, { expect: { allowed: false } }),
      peek(1002, { use: ["burst"], expect: { allowed: true, remaining: 2 } }),
      check(12000, { cost: 2, expect: { allowed: false } }),
      check(12000, { expect: { allowed: true } }),
      check(24000, { mode: "reserve", maxWaitMs: 100 }),
      check(36000, { cost: 4, expect: { allowed: false, retryAfterMs: null } }),
      { atMs: 36000, op: "reset", use: ["steady"] },
      check(36000, { cost: 3, expect: { allowed: true, remaining: 0 } }),
    ],
  },
  {
    name: "stacked: concurrency with a rate, leases from checks",
    policies: {
      slots: { name: "slots", algorithm: "concurrency", limit: 2, lease: "10s" },
      rate: { name: "rate", algorithm: "sliding-log", limit: 3, period: "1s" },
    },
    steps: [
      check(0, { as: "a", expect: { allowed: true, leaseMs: 10000 } }),
      check(10, { as: "b" }),
      check(20, { expect: { allowed: false, policy: "slots" } }),
      { atMs: 30, op: "release", lease: "a", expect: { released: true } },
      check(40, { as: "c", expect: { allowed: true } }),
      { atMs: 50, op: "release", lease: "b" },
      // The rate's first admission (at 0) counts until 1008: 1000 rounded up to its 16 ms buckets.
      check(60, { expect: { allowed: false, policy: "rate", retryAfterMs: 948 } }),
      { atMs: 70, op: "acquire", as: "d", expect: { acquired: false } },
      { atMs: 1008, op: "acquire", as: "e", leaseMs: 500, expect: { acquired: true, leaseMs: 500 } },
      peek(1100, { expect: { allowed: false } }),
      check(1500, { as: "f" }),
      { atMs: 1600, op: "reset" },
      check(1600, { cost: 2, as: "g", expect: { allowed: true, remaining: 0 } }),
    ],
  },
  {
    // The lease belongs to the concurrency policies: a rate policy's leaseMs (the 30 s default)
    // never shortens it, for acquire, check and extend alike, on a key seen or not.
    name: "stacked: the lease length is the shortest of the concurrency policies",
    policies: {
      rate: { name: "rate", algorithm: "fixed-window", limit: 100, period: "1s" },
      long: { name: "long", algorithm: "concurrency", limit: 5, lease: "2m" },
      short: { name: "short", algorithm: "concurrency", limit: 5, lease: "1m" },
    },
    steps: [
      { atMs: 0, op: "acquire", as: "a", expect: { acquired: true, leaseMs: 60_000 } },
      check(10, { as: "b", expect: { allowed: true, leaseMs: 60_000 } }),
      { atMs: 20, op: "extend", lease: "a", expect: { extended: true, leaseMs: 60_000 } },
      { atMs: 30, op: "extend", lease: "nobody", expect: { extended: false, leaseMs: 60_000 } },
      { atMs: 40, op: "extend", lease: "nobody", key: "unseen", expect: { extended: false, leaseMs: 60_000 } },
      { atMs: 50, op: "extend", lease: "b", use: ["rate", "long"], expect: { extended: true, leaseMs: 120_000 } },
      { atMs: 60, op: "extend", lease: "b", leaseMs: 5_000, expect: { extended: true, leaseMs: 5_000 } },
      // a was extended at 20 for 60 s, so it holds its slot until 60 020 (b ran out at 5 060).
      peek(30_020, { use: ["short"], expect: { remaining: 4 } }),
      peek(60_019, { use: ["short"], expect: { remaining: 4 } }),
      peek(60_020, { use: ["short"], expect: { remaining: 5 } }),
    ],
  },
  {
    name: "expiry: idle keys are fresh again, reset forgets",
    policies: {
      g: { name: "g", algorithm: "gcra", limit: 10, period: "10s", burst: 3 },
      w: { name: "w", algorithm: "sliding-window", limit: 3, period: "1s" },
    },
    steps: [
      check(0, { cost: 3, expect: { allowed: true, remaining: 0, resetMs: 3000, policy: "g" } }),
      check(0, { expect: { allowed: false, retryAfterMs: 1334, policy: "w" } }),
      check(1000, { use: ["w"], expect: { allowed: false, remaining: 0, retryAfterMs: 334 } }),
      check(2000, { use: ["w"], expect: { allowed: true, remaining: 2 } }),
      // The gcra state becomes fresh exactly at tat = 3000 and is dropped then.
      peek(2999, { use: ["g"], expect: { allowed: true, remaining: 2, resetMs: 1 } }),
      peek(3000, { use: ["g"], expect: { allowed: true, remaining: 3, resetMs: 0 } }),
      peek(4000, { use: ["w"], expect: { remaining: 3, resetMs: 0 } }),
      check(86_400_000, { cost: 3, expect: { allowed: true, remaining: 0 } }),
      { atMs: 86_400_001, op: "reset" },
      peek(86_400_002, { expect: { allowed: true, remaining: 3, resetMs: 0 } }),
    ],
  },
  {
    name: "policy redefined under the same name starts fresh",
    policies: {
      before: { name: "p", algorithm: "fixed-window", limit: 1, period: "1h" },
      after: { name: "p", algorithm: "gcra", limit: 1, period: "1h" },
    },
    steps: [
      check(0, { use: ["before"] }),
      check(1, { use: ["before"], expect: { allowed: false } }),
      check(2, { use: ["after"], expect: { allowed: true } }),
      check(3, { use: ["before"], expect: { allowed: true } }),
    ],
  },
  {
    name: "extreme sizes: 366 d period, 1e9 burst, huge costs",
    policies: {
      big: { name: "big", algorithm: "gcra", limit: 1, period: "366d", burst: 1_000_000_000 },
      wide: { name: "wide", algorithm: "token-bucket", limit: 1_000_000_000, period: 1, burst: 1_000_000_000 },
    },
    steps: [
      check(0, { cost: 1_000_000_000, expect: { allowed: true, remaining: 0 } }),
      check(1, { expect: { allowed: false } }),
      peek(31_622_400_000),
      check(31_622_400_000, { use: ["big"] }),
      check(31_622_400_001, { use: ["wide"], cost: 999_999_999 }),
    ],
  },
  {
    name: "separate keys never share state",
    policies: { f: { name: "f", algorithm: "fixed-window", limit: 1, period: "1m" } },
    steps: [
      check(0, { key: "a" }),
      check(0, { key: "a", expect: { allowed: false } }),
      check(0, { key: "b", expect: { allowed: true } }),
      check(0, { key: "{a}", expect: { allowed: true } }),
      check(0, { key: "a\u0000", expect: { allowed: true } }),
      check(0, { key: "%7Ba%7D", expect: { allowed: true } }),
      check(0, { key: "{a}", expect: { allowed: false } }),
    ],
  },
];
