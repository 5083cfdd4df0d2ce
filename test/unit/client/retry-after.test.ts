import { describe, expect, it } from "vitest";
import { rateLimitHeaders } from "../../../src/core/headers.js";
import { parsePolicy } from "../../../src/core/policy.js";
import type { Decision } from "../../../src/core/types.js";
import { parseHttpDate, parseRateLimit, parseRateLimitPolicy, parseRetryAfter, readRateLimitHeaders, waitHintMs } from "../../../src/client/retry-after.js";

const nowMs = Date.parse("2015-10-21T07:28:00Z");

describe("parseRetryAfter", () => {
  it("reads delta-seconds", () => {
    expect(parseRetryAfter("120")).toBe(120_000);
    expect(parseRetryAfter(" 3 ")).toBe(3000);
    expect(parseRetryAfter("0")).toBe(0);
    expect(parseRetryAfter("1.5")).toBe(1500);
  });

  it("reads the three HTTP-date forms relative to now", () => {
    expect(parseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", { nowMs })).toBe(30_000);
    expect(parseRetryAfter("Wednesday, 21-Oct-15 07:29:00 GMT", { nowMs })).toBe(60_000);
    expect(parseRetryAfter("Wed Oct 21 07:28:05 2015", { nowMs })).toBe(5000);
    expect(parseRetryAfter("Wed Oct  1 07:28:05 2015", { nowMs: Date.parse("2015-10-01T07:28:00Z") })).toBe(5000);
  });

  it("treats a date in the past as 0", () => {
    expect(parseRetryAfter("Wed, 21 Oct 2015 07:27:00 GMT", { nowMs })).toBe(0);
  });

  it("caps far-future values at maxMs", () => {
    expect(parseRetryAfter("Fri, 01 Jan 2100 00:00:00 GMT", { nowMs, maxMs: 60_000 })).toBe(60_000);
    expect(parseRetryAfter("99999999999", { maxMs: 10_000 })).toBe(10_000);
    expect(parseRetryAfter("999999999999999999999999")).toBe(86_400_000);
  });

  it("gives undefined for negative numbers and garbage", () => {
    for (const garbage of ["-1", "-0.5", "", "  ", "soon", "1s", "0x10", "1e3", "Infinity", "NaN", "2015-10-21T07:28:00Z", "Wed, 31 Feb 2015 07:28:00 GMT", "Wed, 21 Foo 2015 07:28:00 GMT", "Wed, 21 Oct 2015 25:28:00 GMT"]) {
      expect(parseRetryAfter(garbage, { nowMs }), garbage).toBeUndefined();
    }
    expect(parseRetryAfter(null)).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });

  it("reads asctime as UTC, not local time", () => {
    expect(parseHttpDate("Sun Nov  6 08:49:37 1994")).toBe(Date.UTC(1994, 10, 6, 8, 49, 37));
  });
});

describe("RateLimit and RateLimit-Policy", () => {
  it("reads the current draft's lists", () => {
    expect(parseRateLimit('"per-minute";r=0;t=1, "per-hour";r=2950;t=1800')).toEqual([
      { policy: "per-minute", remaining: 0, resetMs: 1000 },
      { policy: "per-hour", remaining: 2950, resetMs: 1_800_000 },
    ]);
    expect(parseRateLimitPolicy('"per-minute";q=600;w=60, "conc";q=5;qu="concurrent-requests"')).toEqual([
      { policy: "per-minute", quota: 600, windowMs: 60_000 },
      { policy: "conc", quota: 5, quotaUnit: "concurrent-requests" },
    ]);
  });

  it("reads the older dictionary and unnamed forms", () => {
    expect(parseRateLimit("limit=10, remaining=0, reset=3")).toEqual([{ policy: "", limit: 10, remaining: 0, resetMs: 3000 }]);
    expect(parseRateLimitPolicy("10;w=1, 50;w=60")).toEqual([
      { policy: "10", quota: 10, windowMs: 1000 },
      { policy: "50", quota: 50, windowMs: 60_000 },
    ]);
  });

  it("refuses malformed fields whole and ignores negative values", () => {
    expect(parseRateLimit('"unterminated;r=1')).toBeUndefined();
    expect(parseRateLimit('"a";r=1,')).toBeUndefined();
    expect(parseRateLimit('"a";r=1 "b"')).toBeUndefined();
    expect(parseRateLimit('"a";r=-1;t=-5')).toEqual([{ policy: "a" }]);
    expect(parseRateLimit(null)).toBeUndefined();
  });

  it("reads what Spillway's own server writes", () => {
    const perMinute = parsePolicy({ name: "per-minute", limit: 600, period: "1m" }, "policy");
    const perHour = parsePolicy({ name: "per-hour", limit: 3600, period: "1h" }, "policy");
    const decision: Decision = {
      allowed: false, limit: 600, remaining: 0, resetMs: 59_000, retryAfterMs: 100, waitMs: 0, policy: "per-minute",
      policies: [
        { policy: "per-minute", allowed: false, limit: 600, remaining: 0, resetMs: 59_000, retryAfterMs: 100 },
        { policy: "per-hour", allowed: true, limit: 3600, remaining: 2950, resetMs: 1_800_000, retryAfterMs: 0 },
      ],
    };
    const headers = new Headers(rateLimitHeaders(decision, [perMinute, perHour], { legacy: true }));
    const hints = readRateLimitHeaders(headers);
    expect(hints.retryAfterMs).toBe(1000);
    expect(hints.policies).toEqual([
      { policy: "per-minute", quota: 600, windowMs: 60_000, remaining: 0, resetMs: 1000 },
      { policy: "per-hour", quota: 3600, windowMs: 3_600_000, remaining: 2950, resetMs: 1_800_000 },
    ]);
    expect(hints.legacy).toEqual({ policy: "", limit: 600, remaining: 0, resetMs: 1000 });
  });
});

describe("X-RateLimit-* and waitHintMs", () => {
  it("reads X-RateLimit-Reset as delta seconds or as an epoch", () => {
    const delta = new Headers({ "x-ratelimit-limit": "60", "x-ratelimit-remaining": "0", "x-ratelimit-reset": "30" });
    expect(readRateLimitHeaders(delta).legacy).toEqual({ policy: "", limit: 60, remaining: 0, resetMs: 30_000 });
    const epoch = new Headers({ "x-ratelimit-remaining": "0", "x-ratelimit-reset": String(nowMs / 1000 + 45) });
    expect(readRateLimitHeaders(epoch, { nowMs }).legacy?.resetMs).toBe(45_000);
    const garbage = new Headers({ "x-ratelimit-remaining": "lots", "x-ratelimit-reset": "-4" });
    expect(readRateLimitHeaders(garbage).legacy).toBeUndefined();
  });

  it("prefers Retry-After, then the longest reset among exhausted policies", () => {
    expect(waitHintMs(new Headers({ "retry-after": "2", ratelimit: '"a";r=0;t=9' }))).toBe(2000);
    expect(waitHintMs(new Headers({ ratelimit: '"a";r=0;t=9, "b";r=0;t=4, "c";r=3;t=60' }))).toBe(9000);
    expect(waitHintMs(new Headers({ ratelimit: '"a";r=3;t=9' }))).toBeUndefined();
    expect(waitHintMs(new Headers({ "x-ratelimit-remaining": "0", "x-ratelimit-reset": "7" }))).toBe(7000);
    expect(waitHintMs(new Headers())).toBeUndefined();
  });
});
