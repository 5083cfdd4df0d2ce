import { describe, expect, it } from "vitest";
import { decide } from "../../../../src/core/decision.js";
import { parsePolicy } from "../../../../src/core/policy.js";
import type { CheckOptions } from "../../../../src/core/types.js";
import { StoreFaultError } from "../../../../src/core/limiter.js";
import { decodeDecision, decodeSingleDecision, decodeStoredState } from "../../../../src/stores/redis/codec.js";

// 5 per second: one request every 200 ms, a burst of 5.
const gcra = parsePolicy({ name: "per-second", algorithm: "gcra", limit: 5, period: "1s" }, "policy");
const tokenBucket = parsePolicy({ name: "per-second", algorithm: "token-bucket", limit: 5, period: "1s" }, "policy");
const reject: CheckOptions = { cost: 1, mode: "reject", maxWaitMs: 0 };
const NOW_MS = 1_795_276_437_602;

/** What the core decides for one policy on a stored text at nowMs. */
function coreDecision(raw: string, options: CheckOptions, nowMs = NOW_MS) {
  const stored = raw === "" ? undefined : decodeStoredState(raw);
  return decide([gcra], () => stored, nowMs, options).decision;
}

describe("decodeSingleDecision (check.lua's short answer for one policy)", () => {
  it("reads the server clock as the script does (seconds, microseconds) and decides with the core", () => {
    // 1795276437 s + 602039 µs = 1795276437602 ms (microseconds rounded down, as in Lua).
    const stored = `g:${NOW_MS + 600}`;
    const decision = decodeSingleDecision(`1 1795276437 602039 ${stored}`, gcra, reject, undefined);
    expect(decision).toEqual(coreDecision(stored, reject));
    expect(decision).toMatchObject({ allowed: true, remaining: 1, resetMs: 800, retryAfterMs: 0, waitMs: 0 });
  });

  it("uses the caller's clock when the store passed it in, and an empty state as none", () => {
    expect(decodeSingleDecision("1 ", gcra, reject, NOW_MS)).toEqual(coreDecision("", reject));
    expect(decodeSingleDecision("1 ", gcra, reject, NOW_MS)).toMatchObject({ allowed: true, remaining: 4, resetMs: 200 });
  });

  it("a refusal carries the core's retry time; a peek (cost 0) is never an admission", () => {
    const full = `g:${NOW_MS + 1000}`;
    expect(decodeSingleDecision(`0 ${full}`, gcra, reject, NOW_MS)).toMatchObject({ allowed: false, retryAfterMs: 200, remaining: 0 });
    const peek = { cost: 0, mode: "reject", maxWaitMs: 0 } as const;
    expect(decodeSingleDecision("0 ", gcra, peek, NOW_MS)).toMatchObject({ allowed: true, remaining: 5 });
  });

  it("a reserve admitted later reports the wait the script scheduled", () => {
    const full = `g:${NOW_MS + 1000}`;
    const reserve = { cost: 1, mode: "reserve", maxWaitMs: 500 } as const;
    expect(decodeSingleDecision(`1 ${full}`, gcra, reserve, NOW_MS)).toMatchObject({ allowed: true, waitMs: 200 });
  });

  it("another algorithm's state (a redefined policy) counts as none, as in the script", () => {
    expect(decodeSingleDecision(`1 t:0:${NOW_MS}`, gcra, reject, NOW_MS)).toMatchObject({ allowed: true, remaining: 4 });
    expect(decodeSingleDecision(`1 g:${NOW_MS + 1000}`, tokenBucket, reject, NOW_MS)).toMatchObject({ allowed: true, remaining: 4 });
  });

  it("a disagreement on admission is a StoreFaultError, never an answer", () => {
    const full = `g:${NOW_MS + 1000}`;
    expect(() => decodeSingleDecision(`1 ${full}`, gcra, reject, NOW_MS)).toThrow(StoreFaultError);
    expect(() => decodeSingleDecision("0 ", gcra, reject, NOW_MS)).toThrow(StoreFaultError);
  });

  it("refuses replies it cannot read with a StoreFaultError (503, nothing admitted), never a 500", () => {
    for (const reply of ["", "2 ", "1", "1 1795276437", "1 g:abc"]) {
      expect(() => decodeSingleDecision(reply, gcra, reject, reply === "1 g:abc" ? NOW_MS : undefined), JSON.stringify(reply)).toThrow(StoreFaultError);
    }
    expect(() => decodeSingleDecision(42 as unknown as string, gcra, reject, NOW_MS)).toThrow(StoreFaultError);
  });
});

describe("decodeDecision (check.lua's whole decision for a stack)", () => {
  const perMinute = parsePolicy({ name: "per-minute", algorithm: "fixed-window", limit: 100, period: "1m" }, "policy");

  it("rebuilds every policy's result and the top level from the numbers", () => {
    const decision = decodeDecision("0 0 2 -1 4 200 0 99 60000 0", [gcra, perMinute], "");
    expect(decision).toEqual({
      allowed: true,
      limit: 100,
      remaining: 99,
      resetMs: 60000,
      retryAfterMs: 0,
      waitMs: 0,
      policy: "per-minute",
      policies: [
        { policy: "per-second", allowed: true, limit: 5, remaining: 4, resetMs: 200, retryAfterMs: 0 },
        { policy: "per-minute", allowed: true, limit: 100, remaining: 99, resetMs: 60000, retryAfterMs: 0 },
      ],
    });
  });

  it("reads null retry times (-1), numbers beyond 2^53 and a granted lease", () => {
    const decision = decodeDecision("-1 0 1 -1 0 3.0000000000000001e+19 -1", [gcra], "");
    expect(decision).toMatchObject({ allowed: false, retryAfterMs: null, resetMs: 3e19 });
    expect(decodeDecision("0 0 1 5000 4 200 0", [gcra], "lease-1")).toMatchObject({ leaseId: "lease-1", leaseMs: 5000 });
  });

  it("refuses a reply of the wrong shape with a StoreFaultError", () => {
    for (const reply of ["0 0 1 -1 4 200", "0 0 3 -1 4 200 0", "0 0 1 -1 x 200 0"]) {
      expect(() => decodeDecision(reply, [gcra], ""), reply).toThrow(StoreFaultError);
    }
  });
});

describe("decodeStoredState (what the scripts store)", () => {
  it("reads every compact state", () => {
    expect(decodeStoredState(`g:${NOW_MS}`)).toEqual({ algorithm: "gcra", state: { tatMs: NOW_MS } });
    expect(decodeStoredState("s:60000:3:1.5")).toEqual({ algorithm: "sliding-window", state: { windowStartMs: 60000, prevCount: 3, currCount: 1.5 } });
  });

  it("refuses a value no script wrote with a StoreFaultError naming it", () => {
    for (const raw of ["g:abc", "g:", "x:1", "s:1:2", '{"algorithm":"gcra","state":{"tatMs":5}}']) {
      expect(() => decodeStoredState(raw), raw).toThrow(StoreFaultError);
      expect(() => decodeStoredState(raw), raw).toThrow(JSON.stringify(raw));
    }
  });
});
