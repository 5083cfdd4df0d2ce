import { describe, expect, it } from "vitest";
import { parsePolicy } from "../../../src/core/policy.js";
import { storePolicies } from "../../../src/core/store-policies.js";
import { ValidationError } from "../../../src/core/validation.js";
import { rateLimitHeaders } from "../../../src/core/headers.js";
import { KeyState } from "../../../src/core/key-state.js";

/** The ValidationError parsePolicy throws for `input`, as [field, message]. */
function refusal(input: unknown): [string, string] {
  try {
    parsePolicy(input, "policy");
  } catch (error) {
    if (error instanceof ValidationError) return [error.field, error.message];
    throw error;
  }
  throw new Error(`accepted ${JSON.stringify(input)}`);
}

const monthly = { name: "monthly", algorithm: "fixed-window", limit: 10_000, calendar: "month", timezone: "Europe/Paris" };
const prepaid = { name: "prepaid", algorithm: "credits", limit: 1000 };

describe("calendar windows and credits: accepted policies", () => {
  it("a calendar window in a zone (default UTC), with the unit's longest window as its nominal period", () => {
    expect(parsePolicy(monthly, "policy")).toMatchObject({ calendar: { unit: "month", timezone: "Europe/Paris" }, periodMs: 31 * 86_400_000 + 3_600_000 });
    expect(parsePolicy({ name: "d", algorithm: "fixed-window", limit: 5, calendar: "day" }, "policy").calendar).toEqual({ unit: "day", timezone: "UTC" });
  });

  it("credits with and without a refill (to defaults to limit)", () => {
    const plain = parsePolicy(prepaid, "policy");
    expect(plain).toMatchObject({ algorithm: "credits", limit: 1000, burst: 1000 });
    expect(plain.calendar).toBeUndefined();
    expect(plain.refillTo).toBeUndefined();
    const refilled = parsePolicy({ ...prepaid, refill: { calendar: "month", timezone: "America/New_York" } }, "policy");
    expect(refilled).toMatchObject({ calendar: { unit: "month", timezone: "America/New_York" } });
    // No `to`: back to the limit, whatever an override makes of it.
    expect(refilled.refillTo).toBeUndefined();
    expect(parsePolicy({ ...prepaid, refill: { calendar: "week", to: 0 } }, "policy")).toMatchObject({ calendar: { unit: "week", timezone: "UTC" }, refillTo: 0 });
  });

  it("a store takes the parsed policy as it is, and one written as in a config", () => {
    const parsed = parsePolicy(monthly, "policy");
    expect(storePolicies([parsed])[0]).toBe(parsed);
    expect(storePolicies([{ ...prepaid, refill: { calendar: "day", to: 10 } } as never])[0]).toMatchObject({ calendar: { unit: "day", timezone: "UTC" }, refillTo: 10 });
    expect(() => storePolicies([{ ...parsed, calendar: { unit: "month", timezone: "Nowhere/Else" } }])).toThrow(/policies\.0\.calendar/);
    expect(() => storePolicies([{ ...parsePolicy(prepaid, "p"), refillTo: -1 }])).toThrow(/policies\.0\.refillTo/);
    expect(() => storePolicies([{ ...parsePolicy(prepaid, "p"), local: { share: 0 } }])).toThrow(/policies\.0\.local/);
  });
});

describe("calendar windows and credits: refused, naming the field", () => {
  it("an unknown time zone", () => {
    expect(refusal({ ...monthly, timezone: "Mars/Olympus_Mons" })).toEqual(["policy.timezone", expect.stringContaining('got "Mars/Olympus_Mons"')]);
    expect(refusal({ ...prepaid, refill: { calendar: "day", timezone: "Nowhere" } })[0]).toBe("policy.refill.timezone");
    expect(refusal({ ...monthly, timezone: 3 })[0]).toBe("policy.timezone");
  });

  // Intl takes UTC offsets as zones; the docs promise IANA names, and an offset is none.
  it.each(["+05:00", "-0500", "+05", "-03:30", " +05:00"])("a UTC offset, %j, saying what to write instead", (timezone) => {
    const [field, message] = refusal({ ...monthly, timezone });
    expect(field).toBe("policy.timezone");
    expect(message).toBe(`policy.timezone: must be an IANA time zone name such as "Europe/Paris" or "UTC", not a UTC offset: got ${JSON.stringify(timezone)} (name the place, or use "Etc/GMT-5" for UTC+5: the Etc/ signs are inverted)`);
    expect(refusal({ ...prepaid, refill: { calendar: "day", timezone } })[0]).toBe("policy.refill.timezone");
    const parsed = parsePolicy(monthly, "policy");
    expect(() => storePolicies([{ ...parsed, calendar: { unit: "month", timezone } }])).toThrow(/policies\.0\.calendar/);
  });

  it.each(["UTC+5", "GMT+05:00", "Z"])("%j, which Intl refuses too", (timezone) => {
    expect(refusal({ ...monthly, timezone })).toEqual(["policy.timezone", expect.stringContaining(`got ${JSON.stringify(timezone)}`)]);
  });

  it("takes IANA names in any case and the database's aliases, as their canonical spelling", () => {
    expect(parsePolicy({ ...monthly, timezone: "Etc/GMT+5" }, "policy").calendar).toEqual({ unit: "month", timezone: "Etc/GMT+5" });
    expect(parsePolicy({ ...monthly, timezone: "europe/paris" }, "policy").calendar).toEqual({ unit: "month", timezone: "Europe/Paris" });
    expect(parsePolicy({ ...monthly, timezone: "utc" }, "policy").calendar).toEqual({ unit: "month", timezone: "UTC" });
  });

  it("calendar on an algorithm that is not a fixed window", () => {
    for (const algorithm of ["gcra", "token-bucket", "sliding-window", "sliding-log"]) {
      expect(refusal({ ...monthly, algorithm })).toEqual(["policy.calendar", expect.stringContaining("is only for fixed-window")]);
    }
    expect(refusal({ ...prepaid, calendar: "month" })).toEqual(["policy.calendar", expect.stringContaining("credits takes refill")]);
  });

  it("period and calendar together, and a unit that is not day, week or month", () => {
    expect(refusal({ ...monthly, period: "30d" })).toEqual(["policy.calendar", expect.stringContaining('period "30d"')]);
    expect(refusal({ ...monthly, calendar: "year" })).toEqual(["policy.calendar", expect.stringContaining("must be one of day, week, month")]);
  });

  it("a time zone without a calendar; a refill that is not for credits or is malformed", () => {
    expect(refusal({ name: "f", algorithm: "fixed-window", limit: 1, period: "1d", timezone: "UTC" })[0]).toBe("policy.timezone");
    expect(refusal({ ...monthly, refill: { calendar: "month" } })[0]).toBe("policy.refill");
    expect(refusal({ ...prepaid, refill: { calendar: "month", to: 1.5 } })[0]).toBe("policy.refill.to");
    expect(refusal({ ...prepaid, refill: { calendar: "month", to: 1e15 + 1 } })[0]).toBe("policy.refill.to");
    expect(refusal({ ...prepaid, refill: { timezone: "UTC" } })[0]).toBe("policy.refill.calendar");
    expect(refusal({ ...prepaid, refill: { calendar: "month", every: 2 } })[0]).toBe("policy.refill.every");
  });

  it("a period, a burst or a local cache on credits", () => {
    expect(refusal({ ...prepaid, period: "1d" })[0]).toBe("policy.period");
    expect(refusal({ ...prepaid, burst: 5 })[0]).toBe("policy.burst");
    expect(refusal({ ...prepaid, local: { share: 0 } })[0]).toBe("policy.local");
  });
});

describe("RateLimit-Policy for a calendar window and a balance", () => {
  it("states the quota without a window (no whole number of seconds is exact), and t runs to the boundary", () => {
    const policies = [parsePolicy(monthly, "p"), parsePolicy(prepaid, "p")];
    const nowMs = Date.UTC(2026, 2, 31, 21, 59, 58, 500);
    const { decision } = new KeyState().check(policies, nowMs, { cost: 1, mode: "reject", maxWaitMs: 0 });
    const headers = rateLimitHeaders(decision, policies);
    expect(headers["RateLimit-Policy"]).toBe('"monthly";q=10000, "prepaid";q=1000');
    expect(headers.RateLimit).toBe('"monthly";r=9999;t=2, "prepaid";r=999;t=0');
  });
});
