import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { rateLimitHeaders } from "../../../src/core/headers.js";
import type { Decision } from "../../../src/core/types.js";
import { Subject, policyOf, reject } from "./core-helpers.js";
import { RUNS, runTrace, stackTraceArb } from "./property-helpers.js";

const perMinute = policyOf({ name: "per-minute", algorithm: "gcra", limit: 600, period: "1m" });
const perHour = policyOf({ name: "per-hour", algorithm: "gcra", limit: 3600, period: "1h" });

/** The decision of README "HTTP API". */
const specDecision: Decision = {
  allowed: false,
  limit: 600,
  remaining: 0,
  resetMs: 59_000,
  retryAfterMs: 100,
  waitMs: 0,
  policy: "per-minute",
  policies: [
    { policy: "per-minute", allowed: false, limit: 600, remaining: 0, resetMs: 59_000, retryAfterMs: 100 },
    { policy: "per-hour", allowed: true, limit: 3600, remaining: 2950, resetMs: 1_800_000, retryAfterMs: 0 },
  ],
};

describe("rateLimitHeaders", () => {
  it("formats the README's HTTP API headers example", () => {
    expect(rateLimitHeaders(specDecision, [perMinute, perHour])).toEqual({
      "RateLimit-Policy": '"per-minute";q=600;w=60, "per-hour";q=3600;w=3600',
      RateLimit: '"per-minute";r=0;t=1, "per-hour";r=2950;t=1800',
      "Retry-After": "1",
    });
  });

  it("advertises an exact window: whole seconds, else the smallest whole-second window of whole periods, q scaled", () => {
    const cases: [string | number, string][] = [
      [1, "q=5000;w=1"],
      ["250ms", "q=20;w=1"],
      [1000, "q=5;w=1"],
      [1001, "q=5000;w=1001"],
      [1500, "q=10;w=3"],
      ["90s", "q=5;w=90"],
      ["1d", "q=5;w=86400"],
      // 366 d is the longest period; a window of whole periods that is whole seconds would be
      // 1000 periods long here, far past 366 d: no w at all rather than a wrong one.
      [31_622_399_999, "q=5"],
    ];
    for (const [period, item] of cases) {
      const policy = policyOf({ algorithm: "fixed-window", limit: 5, period });
      const decision = new Subject([policy]).check(0);
      expect(rateLimitHeaders(decision, [policy])["RateLimit-Policy"], String(period)).toBe(`"p";${item}`);
    }
  });

  it("10 per 250 ms is q=40;w=1 (it admits 40 a second), not q=10;w=1", () => {
    const policy = policyOf({ name: "burst", algorithm: "gcra", limit: 10, period: "250ms" });
    expect(rateLimitHeaders(new Subject([policy]).check(0), [policy])["RateLimit-Policy"]).toBe('"burst";q=40;w=1');
  });

  it("a money budget past 1e9 prints plain integers, RateLimit's within RFC 8941's 15 digits", () => {
    const scaled = policyOf({ name: "usd", algorithm: "fixed-window", limit: 5e13, period: "250ms" });
    expect(rateLimitHeaders(new Subject([scaled]).check(0), [scaled])).toMatchObject({ "RateLimit-Policy": '"usd";q=200000000000000;w=1', RateLimit: '"usd";r=49999999999999;t=1' });
    // Scaled past 15 digits (4e15 a second): the quota alone, no window, as past 366 d.
    const capped = policyOf({ name: "usd", algorithm: "fixed-window", limit: 1e15, period: "250ms" });
    const headers = rateLimitHeaders(new Subject([capped]).check(0), [capped], { legacy: true });
    expect(headers).toMatchObject({ "RateLimit-Policy": '"usd";q=999999999999999', RateLimit: '"usd";r=999999999999999;t=1', "X-RateLimit-Limit": "1000000000000000", "X-RateLimit-Remaining": "999999999999999" });
  });

  it("gives t as the reset, rounded up, for an admitted policy and omits Retry-After", () => {
    const policy = policyOf({ algorithm: "fixed-window", limit: 5, period: "10s" });
    const subject = new Subject([policy]);
    expect(rateLimitHeaders(subject.check(1), [policy])).toEqual({ "RateLimit-Policy": '"p";q=5;w=10', RateLimit: '"p";r=4;t=10' });
    expect(rateLimitHeaders(subject.check(8999), [policy]).RateLimit).toBe('"p";r=3;t=2');
    expect(rateLimitHeaders(subject.check(9000), [policy]).RateLimit).toBe('"p";r=2;t=1');
    expect(rateLimitHeaders(subject.check(12_000, reject(0)), [policy]).RateLimit).toBe('"p";r=5;t=0');
  });

  it("gives t as the retry time, rounded up, for a denied policy, and Retry-After no earlier", () => {
    const policy = policyOf({ algorithm: "fixed-window", limit: 1, period: "10s" });
    const subject = new Subject([policy]);
    subject.check(0);
    const denied = subject.check(7001);
    expect(denied).toMatchObject({ allowed: false, retryAfterMs: 2999, resetMs: 2999 });
    expect(rateLimitHeaders(denied, [policy])).toMatchObject({ RateLimit: '"p";r=0;t=3', "Retry-After": "3" });
  });

  it("keeps Retry-After at least 1 and at least every denied policy's t", () => {
    const twoDenied: Decision = {
      ...specDecision,
      retryAfterMs: 1000,
      policies: [
        { policy: "per-minute", allowed: false, limit: 600, remaining: 0, resetMs: 59_000, retryAfterMs: 1000 },
        { policy: "per-hour", allowed: false, limit: 3600, remaining: 0, resetMs: 1_800_000, retryAfterMs: 5500 },
      ],
    };
    const headers = rateLimitHeaders(twoDenied, [perMinute, perHour]);
    expect(headers.RateLimit).toBe('"per-minute";r=0;t=1, "per-hour";r=0;t=6');
    expect(headers["Retry-After"]).toBe("6");
    const tiny: Decision = { ...specDecision, retryAfterMs: 1, policies: [{ ...specDecision.policies[0]!, retryAfterMs: 1 }] };
    expect(rateLimitHeaders(tiny, [perMinute])["Retry-After"]).toBe("1");
  });

  it("sends no Retry-After when a request can never be admitted (cost above capacity)", () => {
    const policy = policyOf({ algorithm: "fixed-window", limit: 2, period: "10s" });
    const subject = new Subject([policy]);
    subject.check(500);
    const never = subject.check(1000, reject(3));
    expect(never).toMatchObject({ allowed: false, retryAfterMs: null, resetMs: 9000 });
    expect(rateLimitHeaders(never, [policy])).toEqual({ "RateLimit-Policy": '"p";q=2;w=10', RateLimit: '"p";r=1;t=9' });
    const fresh = new Subject([policy]).check(0, reject(3));
    expect(rateLimitHeaders(fresh, [policy])).not.toHaveProperty("Retry-After");
  });

  it("states gcra's capacity, its burst, over the time it takes to refill: q agrees with the decision's limit and r", () => {
    const bursty = policyOf({ algorithm: "gcra", limit: 10, period: "1m", burst: 50 });
    const decision = new Subject([bursty]).check(0);
    const headers = rateLimitHeaders(decision, [bursty]);
    expect(decision.limit).toBe(50);
    expect(headers["RateLimit-Policy"]).toBe('"p";q=50;w=300'); // 10/min, 50 at once: 50 per 5 min
    expect(headers.RateLimit).toBe('"p";r=49;t=6');
    // The overrides page's example: 6000/min with burst 600 (the body's limit is 600, so is q).
    const small = policyOf({ algorithm: "gcra", limit: 6000, period: "1m", burst: 600 });
    expect(rateLimitHeaders(new Subject([small]).check(0), [small])["RateLimit-Policy"]).toBe('"p";q=600;w=6');
    // A refill time of no whole milliseconds: the rate alone, exact.
    const odd = policyOf({ algorithm: "gcra", limit: 7, period: "1s", burst: 3 });
    expect(rateLimitHeaders(new Subject([odd]).check(0), [odd])["RateLimit-Policy"]).toBe('"p";q=7;w=1');
  });

  it("a token bucket smaller than its refill admits at most its burst a period", () => {
    const bucket = policyOf({ algorithm: "token-bucket", limit: 6000, period: "1m", burst: 600 });
    const decision = new Subject([bucket]).check(0);
    expect(decision.limit).toBe(600);
    expect(rateLimitHeaders(decision, [bucket])["RateLimit-Policy"]).toBe('"p";q=600;w=60');
    const deep = policyOf({ algorithm: "token-bucket", limit: 10, period: "1m", burst: 50 });
    expect(rateLimitHeaders(new Subject([deep]).check(0), [deep])["RateLimit-Policy"]).toBe('"p";q=10;w=60');
  });

  it("describes concurrency policies in concurrent requests", () => {
    const slots = policyOf({ name: "slots", algorithm: "concurrency", limit: 3, lease: "10s" });
    const decision = new Subject([slots, perMinute]).check(0);
    expect(rateLimitHeaders(decision, [slots, perMinute])).toEqual({
      "RateLimit-Policy": '"slots";q=3;qu="concurrent-requests", "per-minute";q=600;w=60',
      RateLimit: '"slots";r=2;t=10, "per-minute";r=599;t=1',
    });
  });

  it("adds X-RateLimit-* only when legacy headers are asked for", () => {
    expect(rateLimitHeaders(specDecision, [perMinute, perHour], { legacy: true })).toMatchObject({
      "X-RateLimit-Limit": "600",
      "X-RateLimit-Remaining": "0",
      "X-RateLimit-Reset": "1",
    });
    const policy = policyOf({ algorithm: "fixed-window", limit: 5, period: "10s" });
    const allowed = new Subject([policy]).check(2500);
    expect(rateLimitHeaders(allowed, [policy], { legacy: true })).toMatchObject({ "X-RateLimit-Limit": "5", "X-RateLimit-Remaining": "4", "X-RateLimit-Reset": "8" });
    expect(Object.keys(rateLimitHeaders(allowed, [policy])).some((name) => name.startsWith("X-"))).toBe(false);
  });
});

/** Parses `"name";r=1;t=2, …` into [name, remaining, t] triples. */
function parseRateLimit(value: string): [string, number, number][] {
  return value.split(", ").map((item) => {
    const match = /^"([a-z0-9._-]+)";r=(\d+);t=(\d+)$/.exec(item);
    if (!match) throw new Error(`bad RateLimit item ${item}`);
    return [match[1]!, Number(match[2]), Number(match[3])];
  });
}

describe("property: headers of real decisions", () => {
  it("list every policy with r = remaining and t = ⌈retry or reset / 1000⌉; Retry-After only on denials that may pass later, never before a denied t", () => {
    fc.assert(
      fc.property(stackTraceArb(), ({ policies, steps }) => {
        for (const { decision } of runTrace(policies, steps).records) {
          const headers = rateLimitHeaders(decision, policies);
          const items = parseRateLimit(headers.RateLimit!);
          expect(items).toEqual(
            decision.policies.map((p) => [p.policy, p.remaining, Math.ceil((p.allowed ? p.resetMs : (p.retryAfterMs ?? p.resetMs)) / 1000)]),
          );
          expect(headers["RateLimit-Policy"]!.split(", ")).toHaveLength(policies.length);
          if (decision.allowed || decision.retryAfterMs === null) {
            expect(headers["Retry-After"]).toBeUndefined();
          } else {
            const retryAfterSeconds = Number(headers["Retry-After"]);
            expect(retryAfterSeconds).toBeGreaterThanOrEqual(1);
            for (const [index, [, , t]] of items.entries()) if (!decision.policies[index]!.allowed) expect(retryAfterSeconds).toBeGreaterThanOrEqual(t);
            if (decision.retryAfterMs !== null) expect(retryAfterSeconds * 1000).toBeGreaterThanOrEqual(decision.retryAfterMs);
          }
        }
      }),
      RUNS,
    );
  });
});
