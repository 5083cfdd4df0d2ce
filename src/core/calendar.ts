/**
 * Calendar boundaries (SPEC §1 `calendar`, `timezone`): the one place that turns an instant
 * into the start of its day, week (Monday 00:00) or month in an IANA zone, following the
 * zone's offset changes. Intl only (no tz database of our own): every runtime Spillway runs
 * on (Node, workerd) ships full ICU.
 *
 * Every store decides a calendar window from its own clock: memory and the Durable Object
 * call this directly; Redis gets the boundaries around the client's clock as an argument and
 * picks among them by its own TIME (calendarBoundsAround below; src/stores/redis/lua/
 * calendar.lua). That is the one fork between TypeScript and Lua for calendars.
 */

export const CALENDAR_UNITS = ["day", "week", "month"] as const;
export type CalendarUnit = (typeof CALENDAR_UNITS)[number];

/** A window that starts at each calendar boundary of `unit` in `timezone`. */
export interface CalendarSpec {
  unit: CalendarUnit;
  /** IANA zone name, as Intl accepts it ("UTC", "Europe/Paris"). */
  timezone: string;
}

/** The nominal length of each unit (a policy's periodMs, for what needs a number): the longest such window. */
export const CALENDAR_NOMINAL_MS: Record<CalendarUnit, number> = { day: 90_000_000, week: 608_400_000, month: 2_682_000_000 };

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(timezone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(timezone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat("en-US", { timeZone: timezone, hourCycle: "h23", year: "numeric", month: "numeric", day: "numeric", hour: "numeric", minute: "numeric", second: "numeric" });
    formatters.set(timezone, formatter);
  }
  return formatter;
}

/**
 * Whether the zone is an IANA name Intl knows (any case, and the database's aliases such as
 * `US/Eastern`); answers its canonical spelling, or undefined. Intl also takes a UTC offset
 * (`+05:00`, `-0500`): refused, since the docs promise IANA names and an offset is no zone
 * (`Etc/GMT-5` is the IANA name of UTC+5).
 *
 * @example knownTimezone("europe/paris") // "Europe/Paris"
 * @example knownTimezone("+05:00") // undefined
 */
export function knownTimezone(timezone: string): string | undefined {
  let resolved: string;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: timezone }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
  return isUtcOffset(timezone) || isUtcOffset(resolved) ? undefined : resolved;
}

/** `+05:00`, `-0500`, `+05`: how Intl writes an offset zone. */
export function isUtcOffset(timezone: string): boolean {
  return /^\s*[+-]/.test(timezone);
}

/** The wall clock of `timeMs` in the zone, as a UTC timestamp of the same fields (seconds precision). */
function wallMs(timezone: string, timeMs: number): number {
  const fields: Record<string, number> = {};
  for (const part of formatterOf(timezone).formatToParts(timeMs)) if (part.type !== "literal") fields[part.type] = Number(part.value);
  return Date.UTC(fields.year!, fields.month! - 1, fields.day!, fields.hour!, fields.minute!, fields.second!);
}

/** The zone's offset from UTC at `timeMs`, in ms (wall clock minus UTC). */
function offsetMs(timezone: string, timeMs: number): number {
  const secondMs = Math.floor(timeMs / 1000) * 1000;
  return wallMs(timezone, secondMs) - secondMs;
}

/**
 * The first instant whose wall-clock date in the zone is `dateUtcMs` (a UTC midnight naming
 * the date): local midnight, or, where midnight does not exist (a change at 00:00, as in
 * America/Santiago), the instant of the change. Where midnight happens twice, the first.
 */
function zonedDayStartMs(timezone: string, dateUtcMs: number): number {
  const before = offsetMs(timezone, dateUtcMs - 86_400_000);
  const after = offsetMs(timezone, dateUtcMs + 86_400_000);
  const candidates = before === after ? [dateUtcMs - before] : [dateUtcMs - before, dateUtcMs - after].sort((a, b) => a - b);
  for (const candidate of candidates) if (candidate - dateUtcMs + offsetMs(timezone, candidate) === 0) return candidate;
  // Midnight skipped (a forward change at 00:00): the day starts at the change, which is where
  // the old offset's midnight would have been (the later candidate).
  return candidates[candidates.length - 1]!;
}

/** The UTC-midnight date that names the first day of the window holding the wall date `wallDateMs`. */
function windowDateOf(unit: CalendarUnit, wallDateMs: number): number {
  const date = new Date(wallDateMs);
  if (unit === "day") return wallDateMs;
  if (unit === "month") return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), 1);
  // Week: back to Monday (getUTCDay: Sunday 0).
  return wallDateMs - ((date.getUTCDay() + 6) % 7) * 86_400_000;
}

/** The date naming the window after the one that starts on `windowDateMs`. */
function nextWindowDate(unit: CalendarUnit, windowDateMs: number): number {
  const date = new Date(windowDateMs);
  if (unit === "day") return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 1);
  if (unit === "week") return Date.UTC(date.getUTCFullYear(), date.getUTCMonth(), date.getUTCDate() + 7);
  return Date.UTC(date.getUTCFullYear(), date.getUTCMonth() + 1, 1);
}

/** One window, [startMs, endMs). */
export interface CalendarWindow {
  startMs: number;
  endMs: number;
}

/** The last window found per spec: decisions in one window ask again and again. */
const lastWindows = new Map<string, CalendarWindow>();

/**
 * The calendar window that holds `timeMs`: [its boundary, the next boundary).
 *
 * @example calendarWindow({ unit: "month", timezone: "Europe/Paris" }, Date.UTC(2026, 2, 29, 12)) // { startMs: Date.UTC(2026, 1, 28, 23), endMs: Date.UTC(2026, 2, 31, 22) }
 */
export function calendarWindow(spec: CalendarSpec, timeMs: number): CalendarWindow {
  const id = `${spec.unit} ${spec.timezone}`;
  const last = lastWindows.get(id);
  if (last && last.startMs <= timeMs && timeMs < last.endMs) return last;
  const wall = wallMs(spec.timezone, timeMs);
  const date = windowDateOf(spec.unit, wall - (((wall % 86_400_000) + 86_400_000) % 86_400_000));
  let startMs = zonedDayStartMs(spec.timezone, date);
  let endMs = zonedDayStartMs(spec.timezone, nextWindowDate(spec.unit, date));
  // The wall clock has whole seconds; an instant just before a boundary rounds to it. Step to
  // the neighbour so that the answer always holds timeMs.
  if (timeMs < startMs) {
    const previous = calendarWindow(spec, startMs - 1000);
    startMs = previous.startMs;
    endMs = previous.endMs;
  } else if (timeMs >= endMs) {
    const following = calendarWindow(spec, endMs);
    startMs = following.startMs;
    endMs = following.endMs;
  }
  const window = { startMs, endMs };
  if (lastWindows.size > 256) lastWindows.clear();
  lastWindows.set(id, window);
  return window;
}

/** How far the store's clock may be from the client's before the boundaries sent to Redis no longer cover it. */
export const CALENDAR_CLOCK_MARGIN_MS = 3_600_000;
/** How far past now a decision may look: the longest reserve wait (MAX_RESERVE_WAIT_MS in src/service/requests.ts). */
const CALENDAR_REACH_MS = 86_400_000;

/**
 * The boundaries a store that decides by its own clock needs when the client computes them
 * (Redis): from the start of the window holding aroundMs − margin to the end of the window
 * after the one holding aroundMs + margin + a day (a reservation may wait a day, into a window
 * whose end it must know). Ascending. `validFromMs` … `validUntilMs`: the clock readings for
 * which the same list is the answer.
 *
 * @example calendarBoundsAround({ unit: "month", timezone: "UTC" }, Date.UTC(2026, 0, 15)).bounds // [Jan 1, Feb 1, Mar 1] 00:00 UTC, as ms
 */
export function calendarBoundsAround(spec: CalendarSpec, aroundMs: number, marginMs = CALENDAR_CLOCK_MARGIN_MS): { bounds: number[]; validFromMs: number; validUntilMs: number } {
  const first = calendarWindow(spec, aroundMs - marginMs);
  const far = calendarWindow(spec, aroundMs + marginMs + CALENDAR_REACH_MS);
  const bounds = [first.startMs, first.endMs];
  while (bounds[bounds.length - 1]! <= far.endMs) bounds.push(calendarWindow(spec, bounds[bounds.length - 1]!).endMs);
  return {
    bounds,
    validFromMs: Math.max(first.startMs + marginMs, far.startMs - marginMs - CALENDAR_REACH_MS),
    validUntilMs: Math.min(first.endMs + marginMs, far.endMs - marginMs - CALENDAR_REACH_MS),
  };
}
