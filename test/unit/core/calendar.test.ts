import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { type CalendarSpec, type CalendarUnit, calendarBoundsAround, calendarWindow, knownTimezone } from "../../../src/core/calendar.js";
import { RUNS } from "./property-helpers.js";

const HOUR = 3_600_000;
const utc = (...parts: [number, number, number, number?, number?]) => Date.UTC(parts[0], parts[1] - 1, parts[2], parts[3] ?? 0, parts[4] ?? 0);
const window = (unit: CalendarUnit, timezone: string, atMs: number) => calendarWindow({ unit, timezone }, atMs);

/** The wall-clock date and weekday of an instant in a zone, read with Intl (independently of calendar.ts). */
function wall(timezone: string, atMs: number): { date: string; weekday: string; day: number } {
  const parts = new Intl.DateTimeFormat("en-CA", { timeZone: timezone, year: "numeric", month: "2-digit", day: "2-digit", weekday: "short" }).formatToParts(atMs);
  const get = (type: string) => parts.find((part) => part.type === type)!.value;
  return { date: `${get("year")}-${get("month")}-${get("day")}`, weekday: get("weekday"), day: Number(get("day")) };
}

describe("calendar windows: known boundaries", () => {
  it("a day that loses an hour and one that gains one (America/New_York, 2026)", () => {
    expect(window("day", "America/New_York", utc(2026, 3, 8, 12))).toEqual({ startMs: utc(2026, 3, 8, 5), endMs: utc(2026, 3, 9, 4) });
    expect(window("day", "America/New_York", utc(2026, 11, 1, 12))).toEqual({ startMs: utc(2026, 11, 1, 4), endMs: utc(2026, 11, 2, 5) });
  });

  it("a month across the change to summer time (Europe/Paris, March 2026)", () => {
    expect(window("month", "Europe/Paris", utc(2026, 3, 29, 12))).toEqual({ startMs: utc(2026, 2, 28, 23), endMs: utc(2026, 3, 31, 22) });
  });

  it("weeks start on Monday 00:00 in the zone, across a year end (Asia/Tokyo)", () => {
    expect(window("week", "Asia/Tokyo", utc(2026, 1, 1))).toEqual({ startMs: utc(2025, 12, 28, 15), endMs: utc(2026, 1, 4, 15) });
  });

  it("a half-hour zone and a leap February (Asia/Kolkata, 2028)", () => {
    expect(window("month", "Asia/Kolkata", utc(2028, 2, 20))).toEqual({ startMs: utc(2028, 1, 31, 18, 30), endMs: utc(2028, 2, 29, 18, 30) });
  });

  it("a midnight that never happens starts the day at the change; one that happens twice, at its first (America/Santiago, 2026)", () => {
    // 09-06: clocks jump from 00:00 to 01:00 (-04 to -03) at 04:00 UTC.
    expect(window("day", "America/Santiago", utc(2026, 9, 6, 12)).startMs).toBe(utc(2026, 9, 6, 4));
    // 04-05: clocks go back from 00:00 to 23:00 (-03 to -04) at 03:00 UTC; 04-05 00:00 -04 is 04:00 UTC.
    expect(window("day", "America/Santiago", utc(2026, 4, 5, 12)).startMs).toBe(utc(2026, 4, 5, 4));
    expect(window("day", "America/Santiago", utc(2026, 4, 5, 3, 30))).toEqual({ startMs: utc(2026, 4, 4, 3), endMs: utc(2026, 4, 5, 4) });
  });

  it("the instant of a boundary belongs to the window it starts; the millisecond before, to the one before", () => {
    const boundary = utc(2026, 3, 31, 22);
    expect(window("month", "Europe/Paris", boundary).startMs).toBe(boundary);
    expect(window("month", "Europe/Paris", boundary - 1).endMs).toBe(boundary);
  });

  it("knows IANA zones and refuses made-up ones", () => {
    expect(knownTimezone("Europe/Paris")).toBe("Europe/Paris");
    expect(knownTimezone("UTC")).toBeDefined();
    expect(knownTimezone("Mars/Olympus_Mons")).toBeUndefined();
    expect(knownTimezone("")).toBeUndefined();
  });
});

describe("calendar windows: properties in zones with odd offsets and changes", () => {
  const zones = ["UTC", "Europe/Paris", "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe", "America/Santiago", "Pacific/Chatham", "Asia/Tehran"];
  const spec = fc.record({ unit: fc.constantFrom<CalendarUnit>("day", "week", "month"), timezone: fc.constantFrom(...zones) });
  const instant = fc.integer({ min: utc(2020, 1, 1), max: utc(2035, 12, 31) });

  it("the window holds the instant, starts on its unit's first day, and ends where the next starts", () => {
    fc.assert(
      fc.property(spec, instant, (calendar: CalendarSpec, atMs: number) => {
        const { startMs, endMs } = calendarWindow(calendar, atMs);
        expect(startMs <= atMs && atMs < endMs).toBe(true);
        // The date changes at the start (the instant before is another day), and the next window starts at the end.
        expect(wall(calendar.timezone, startMs - 1).date).not.toBe(wall(calendar.timezone, startMs).date);
        expect(calendarWindow(calendar, endMs).startMs).toBe(endMs);
        const first = wall(calendar.timezone, startMs);
        if (calendar.unit === "week") expect(first.weekday).toBe("Mon");
        if (calendar.unit === "month") expect(first.day).toBe(1);
        const lengthHours = (endMs - startMs) / HOUR;
        const [min, max] = { day: [22, 26], week: [166, 170], month: [27 * 24, 32 * 24] }[calendar.unit];
        expect(lengthHours >= min! && lengthHours <= max!).toBe(true);
      }),
      { numRuns: RUNS.numRuns * 4 },
    );
  });

  it("the boundaries sent to a store cover its clock an hour either way and a day of reservations", () => {
    fc.assert(
      fc.property(spec, instant, fc.integer({ min: -HOUR, max: HOUR }), (calendar: CalendarSpec, aroundMs: number, skewMs: number) => {
        const { bounds, validFromMs, validUntilMs } = calendarBoundsAround(calendar, aroundMs);
        expect(validFromMs <= aroundMs && aroundMs < validUntilMs).toBe(true);
        for (let i = 1; i < bounds.length; i++) expect(calendarWindow(calendar, bounds[i - 1]!).endMs).toBe(bounds[i]);
        const storeMs = aroundMs + skewMs;
        // The store's window, and the window after the one a day of waiting reaches, are among them.
        expect(bounds[0]! <= storeMs).toBe(true);
        expect(bounds).toContain(calendarWindow(calendar, calendarWindow(calendar, storeMs + 86_400_000).endMs).endMs);
        // Any clock reading in the valid span gets the same list.
        const later = Math.min(validUntilMs - 1, aroundMs + 60_000);
        expect(calendarBoundsAround(calendar, later).bounds).toEqual(bounds);
      }),
      { numRuns: RUNS.numRuns * 2 },
    );
  });
});
