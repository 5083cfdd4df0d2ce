import { type Member, parseMembers } from "./structured-fields.js";

/** Default cap on any wait a server asks for: a day. A longer hint is more likely a bug than a plan. */
export const DEFAULT_MAX_HINT_MS = 86_400_000;

export interface HintOptions {
  /** The current time, epoch ms (default Date.now()); HTTP-dates are relative to it. */
  nowMs?: number;
  /** Waits further than this are capped to it (default one day). */
  maxMs?: number;
}

const MONTHS = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
const DAY = "(?:mon|tue|wed|thu|fri|sat|sun)";
const LONG_DAY = "(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)";
const TIME = "(\\d{2}):(\\d{2}):(\\d{2})";
// RFC 9110 §5.6.7: IMF-fixdate, and the obsolete RFC 850 and asctime forms a recipient must accept.
const IMF_FIXDATE = new RegExp(`^${DAY}, (\\d{2}) ([a-z]{3}) (\\d{4}) ${TIME} gmt$`);
const RFC_850 = new RegExp(`^${LONG_DAY}, (\\d{2})-([a-z]{3})-(\\d{2}) ${TIME} gmt$`);
const ASCTIME = new RegExp(`^${DAY} ([a-z]{3}) (\\d{1,2}) ${TIME} (\\d{4})$`);

/**
 * Parses an HTTP-date in any of its three forms to epoch ms. Date.parse is not used: it
 * accepts almost anything and reads asctime (which has no zone) as local time.
 *
 * @example parseHttpDate("Sun, 06 Nov 1994 08:49:37 GMT") // 784111777000
 */
export function parseHttpDate(value: string): number | undefined {
  const text = value.trim().toLowerCase().replace(/\s+/g, " ");
  let parts: [day: string, month: string, year: string, hour: string, minute: string, second: string] | undefined;
  let match = IMF_FIXDATE.exec(text);
  if (match) parts = [match[1]!, match[2]!, match[3]!, match[4]!, match[5]!, match[6]!];
  else if ((match = RFC_850.exec(text))) {
    // Two-digit years: RFC 9110 reads a year more than 50 years ahead as the past century; a fixed pivot at 70 is that rule until 2020 + 50.
    const twoDigits = Number(match[3]);
    const year = twoDigits + (twoDigits < 70 ? 2000 : 1900);
    parts = [match[1]!, match[2]!, String(year), match[4]!, match[5]!, match[6]!];
  } else if ((match = ASCTIME.exec(text))) parts = [match[2]!.trim(), match[1]!, match[6]!, match[3]!, match[4]!, match[5]!];
  if (!parts) return undefined;
  const [day, month, year, hour, minute, second] = parts.map((part, index) => (index === 1 ? MONTHS.indexOf(part) : Number(part))) as number[];
  if (month! < 0 || hour! > 23 || minute! > 59 || second! > 60) return undefined;
  const ms = Date.UTC(year!, month!, day!, hour!, minute!, Math.min(second!, 59));
  // Date.UTC rolls 31 Feb over into March; a date that does not exist is garbage.
  if (new Date(ms).getUTCDate() !== day) return undefined;
  return ms;
}

/**
 * Retry-After (RFC 9110 §10.2.3) in ms from now: delta-seconds (`120`; decimals are read
 * leniently) or an HTTP-date. A date in the past is 0; a negative number or garbage is
 * undefined (no hint); a far-future value is capped to `maxMs`.
 *
 * @example parseRetryAfter("2") // 2000
 * @example parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT", { nowMs: Date.parse("2015-10-21T07:27:00Z") }) // 60000
 */
export function parseRetryAfter(value: string | null | undefined, options: HintOptions = {}): number | undefined {
  if (value === null || value === undefined) return undefined;
  const text = value.trim();
  let ms: number | undefined;
  if (/^\d+(\.\d+)?$/.test(text)) ms = Math.ceil(Number(text) * 1000);
  else {
    const dateMs = parseHttpDate(text);
    if (dateMs !== undefined) ms = Math.max(0, dateMs - (options.nowMs ?? Date.now()));
  }
  if (ms === undefined || !Number.isFinite(ms)) return undefined;
  return Math.min(ms, options.maxMs ?? DEFAULT_MAX_HINT_MS);
}

/** One policy as RateLimit-Policy describes it. */
export interface RateLimitPolicyInfo {
  /** The policy's name (or its quota, for the older unnamed form). */
  policy: string;
  quota?: number;
  windowMs?: number;
  /** `requests`, `content-bytes`, `concurrent-requests`, … */
  quotaUnit?: string;
}

/** One policy's current state as RateLimit describes it. */
export interface RateLimitState {
  policy: string;
  limit?: number;
  remaining?: number;
  /** Until the quota is back (draft `t`, older `reset`), in ms. */
  resetMs?: number;
}

const nonNegative = (value: unknown): number | undefined => (typeof value === "number" && value >= 0 ? value : undefined);
const seconds = (value: unknown): number | undefined => {
  const parsed = nonNegative(value);
  return parsed === undefined ? undefined : Math.ceil(parsed * 1000);
};

/**
 * RateLimit-Policy (draft-ietf-httpapi-ratelimit-headers): `"per-minute";q=600;w=60`, and the
 * older `600;w=60`. Undefined when absent or malformed.
 */
export function parseRateLimitPolicy(value: string | null | undefined): RateLimitPolicyInfo[] | undefined {
  return parseMembers(value)?.map((member) => {
    const info: RateLimitPolicyInfo = { policy: String(member.value) };
    const quota = nonNegative(member.params.get("q")) ?? (typeof member.value === "number" ? nonNegative(member.value) : undefined);
    if (quota !== undefined) info.quota = quota;
    const windowMs = seconds(member.params.get("w"));
    if (windowMs !== undefined) info.windowMs = windowMs;
    const unit = member.params.get("qu");
    if (typeof unit === "string") info.quotaUnit = unit;
    return info;
  });
}

/**
 * RateLimit: the current draft's list (`"per-minute";r=0;t=1, "per-hour";r=2950;t=1800`) or
 * the older dictionary (`limit=10, remaining=0, reset=3`). Undefined when absent or malformed.
 */
export function parseRateLimit(value: string | null | undefined): RateLimitState[] | undefined {
  const members = parseMembers(value);
  if (!members) return undefined;
  if (members.length > 0 && members.every((member) => member.key !== undefined)) return [fromDictionary(members)];
  return members.map((member) => {
    const state: RateLimitState = { policy: String(member.value) };
    const remaining = nonNegative(member.params.get("r"));
    if (remaining !== undefined) state.remaining = remaining;
    const resetMs = seconds(member.params.get("t"));
    if (resetMs !== undefined) state.resetMs = resetMs;
    return state;
  });
}

function fromDictionary(members: Member[]): RateLimitState {
  const state: RateLimitState = { policy: "" };
  for (const member of members) {
    if (member.key === "limit") state.limit = nonNegative(member.value);
    if (member.key === "remaining") state.remaining = nonNegative(member.value);
    if (member.key === "reset") state.resetMs = seconds(member.value);
  }
  return state;
}

/** What a response's rate-limit headers say, all times in ms from now. */
export interface RateLimitHints {
  retryAfterMs?: number;
  /** RateLimit and RateLimit-Policy, joined by policy name. */
  policies: Array<RateLimitPolicyInfo & RateLimitState>;
  /** X-RateLimit-Limit/Remaining/Reset, or the older RateLimit-Limit/Remaining/Reset. */
  legacy?: RateLimitState;
}

/**
 * Reads Retry-After, RateLimit, RateLimit-Policy and X-RateLimit-* from a response's headers.
 *
 * @example readRateLimitHeaders(response.headers).policies[0]?.remaining
 */
export function readRateLimitHeaders(headers: Headers, options: HintOptions = {}): RateLimitHints {
  const maxMs = options.maxMs ?? DEFAULT_MAX_HINT_MS;
  const hints: RateLimitHints = { policies: [] };
  const retryAfterMs = parseRetryAfter(headers.get("retry-after"), options);
  if (retryAfterMs !== undefined) hints.retryAfterMs = retryAfterMs;
  const described = parseRateLimitPolicy(headers.get("ratelimit-policy")) ?? [];
  for (const state of parseRateLimit(headers.get("ratelimit")) ?? []) {
    const policy = described.find((info) => info.policy === state.policy);
    const merged = { ...policy, ...state };
    if (merged.resetMs !== undefined) merged.resetMs = Math.min(merged.resetMs, maxMs);
    hints.policies.push(merged);
  }
  const legacy = readLegacy(headers, "x-ratelimit-", options) ?? readLegacy(headers, "ratelimit-", options);
  if (legacy) hints.legacy = legacy;
  return hints;
}

/**
 * How long to wait before the next request, from a response's headers: Retry-After when
 * present, else the longest reset among policies with nothing remaining. Undefined when
 * the headers give no reason to wait.
 *
 * @example waitHintMs(response.headers) // 1000 for `Retry-After: 1`
 */
export function waitHintMs(headers: Headers, options: HintOptions = {}): number | undefined {
  const hints = readRateLimitHeaders(headers, options);
  if (hints.retryAfterMs !== undefined) return hints.retryAfterMs;
  const exhausted = [...hints.policies, ...(hints.legacy ? [hints.legacy] : [])].filter((state) => state.remaining === 0 && state.resetMs !== undefined);
  if (exhausted.length === 0) return undefined;
  return Math.max(...exhausted.map((state) => state.resetMs!));
}

function readLegacy(headers: Headers, prefix: string, options: HintOptions): RateLimitState | undefined {
  const number = (name: string) => {
    const text = headers.get(prefix + name)?.trim();
    return text !== undefined && /^\d+(\.\d+)?$/.test(text) ? Number(text) : undefined;
  };
  const limit = number("limit");
  const remaining = number("remaining");
  const resetMs = legacyResetMs(number("reset-after") ?? number("reset"), options);
  if (limit === undefined && remaining === undefined && resetMs === undefined) return undefined;
  const state: RateLimitState = { policy: "" };
  if (limit !== undefined) state.limit = limit;
  if (remaining !== undefined) state.remaining = remaining;
  if (resetMs !== undefined) state.resetMs = resetMs;
  return state;
}

/**
 * X-RateLimit-Reset is delta-seconds on some APIs and an epoch on others (GitHub: epoch
 * seconds). No real delta reaches 1e9 s (31 years), so larger numbers are epochs.
 */
function legacyResetMs(value: number | undefined, options: HintOptions): number | undefined {
  if (value === undefined) return undefined;
  const nowMs = options.nowMs ?? Date.now();
  let ms: number;
  if (value >= 1e12) ms = value - nowMs;
  else if (value >= 1e9) ms = value * 1000 - nowMs;
  else ms = value * 1000;
  return Math.min(Math.max(0, Math.ceil(ms)), options.maxMs ?? DEFAULT_MAX_HINT_MS);
}
