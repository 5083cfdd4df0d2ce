import { CALENDAR_UNITS, knownTimezone } from "./calendar.js";
import { MAX_DURATION_MS } from "./duration.js";
import { LEASABLE_ALGORITHMS, MAX_BLOCK_MS, MAX_BUDGET_LIMIT, MIN_BLOCK_MS, MAX_LOCAL_SHARE, POLICY_NAME_PATTERN, maxLimitOf, parsePolicy } from "./policy.js";
import { ALGORITHMS, type Policy } from "./types.js";
import { ValidationError, describeValue } from "./validation.js";

/** Policy objects already checked whole (by identity): the steady state costs one lookup each. */
const checked = new WeakSet<object>();
/** Policies written as in a config (`period: "1m"`), parsed once per object. */
const parsedFrom = new WeakMap<object, Policy>();

/**
 * What every store entry point (check, peek, reset, acquire, release, extend) calls on the
 * policies it was handed, so that a store never decides from a policy it cannot read.
 * Plain JavaScript can hand a store anything: a policy as written in a config
 * (`{ name, limit, period: "1m" }`), which has no `periodMs` (arithmetic on `undefined` is NaN,
 * and a NaN comparison admitted every request), or garbage. A policy as written is parsed
 * with parsePolicy; anything else is refused with a TypeError that names the field
 * (`policies.0.periodMs: …`); nothing is ever admitted by default.
 *
 * Answers `policies` itself when every member is a valid Policy (stores cache work by the
 * array's identity), else a new array of parsed policies.
 *
 * @example const stack = storePolicies([{ name: "per-minute", limit: 2, period: "1m" }]); // [{ …, periodMs: 60000 }]
 */
export function storePolicies(policies: readonly Policy[]): readonly Policy[] {
  const input: unknown = policies;
  if (!Array.isArray(input)) throw new TypeError(`policies: must be an array of policies, got ${describeValue(input)}`);
  if (input.length === 0) throw new TypeError("policies: must name at least one policy, got []");
  let index = 0;
  while (index < input.length && checked.has(input[index] as object)) index++;
  if (index === input.length) return policies;
  const result: Policy[] = input.slice(0, index) as Policy[];
  let changed = false;
  for (; index < input.length; index++) {
    const item: unknown = input[index];
    const policy = storePolicy(item, `policies.${index}`);
    if (policy !== item) changed = true;
    result.push(policy);
  }
  return changed ? result : policies;
}

/** Policies whose renamed copies (renamedPolicy) are valid once their name is. */
const renamable = new WeakSet<Policy>();

/**
 * A policy under another name, checked (the rate limit service's per-counter copies,
 * `r.<hash>`, one per client address): the first copy of a policy is checked whole, later
 * ones only their name, so a store does not check every copy field by field again. (The
 * policy's own name may be one a store would refuse, a config's label: only the copy's counts.)
 *
 * @example const stored = renamedPolicy(perSecond, "r.3f2a…");
 */
export function renamedPolicy(policy: Policy, name: string): Policy {
  const renamed: Policy = { ...policy, name };
  if (renamable.has(policy)) {
    if (!POLICY_NAME_PATTERN.test(name)) throw new TypeError(`name: must match [a-z0-9][a-z0-9._-]{0,63}, got ${describeValue(name)}`);
    checked.add(renamed);
    return renamed;
  }
  const stored = storePolicy(renamed, "policy");
  if (stored === renamed) renamable.add(policy);
  return stored;
}

function storePolicy(value: unknown, field: string): Policy {
  if (value === null || typeof value !== "object" || Array.isArray(value)) {
    throw new TypeError(`${field}: must be a policy object, got ${describeValue(value)}`);
  }
  const parsed = parsedFrom.get(value);
  if (parsed) return parsed;
  if (!("periodMs" in value) && !("leaseMs" in value)) {
    // Written as in a config: parse it (durations, defaults), as the HTTP API would.
    let policy: Policy;
    try {
      policy = parsePolicy(value, field);
    } catch (error) {
      if (error instanceof ValidationError) throw new TypeError(error.message, { cause: error });
      throw error;
    }
    parsedFrom.set(value, policy);
    checked.add(policy);
    return policy;
  }
  const problem = resolvedPolicyProblem(value as Record<string, unknown>);
  if (problem) {
    throw new TypeError(`${field}.${problem.field}: ${problem.rule}, got ${describeValue(problem.value)} (pass a policy as written in a config, { name, limit, period: "1m" }, or one from parsePolicy)`);
  }
  checked.add(value);
  return value as Policy;
}

/** The first field of a resolved Policy (as parsePolicy answers it) that breaks its rule. */
function resolvedPolicyProblem(policy: Record<string, unknown>): { field: string; rule: string; value: unknown } | undefined {
  const { name, algorithm, limit, periodMs, burst, leaseMs, failMode, local, blockMs, calendar, refillTo } = policy;
  if (typeof name !== "string" || !POLICY_NAME_PATTERN.test(name)) return { field: "name", rule: "must match [a-z0-9][a-z0-9._-]{0,63}", value: name };
  if (!ALGORITHMS.includes(algorithm as never)) return { field: "algorithm", rule: `must be one of ${ALGORITHMS.join(", ")}`, value: algorithm };
  const maxLimit = maxLimitOf(algorithm as string);
  if (!integerIn(limit, 1, maxLimit)) return { field: "limit", rule: `must be an integer from 1 to ${maxLimit}`, value: limit };
  if (!integerIn(periodMs, 1, MAX_DURATION_MS)) return { field: "periodMs", rule: `must be a whole number of ms from 1 to ${MAX_DURATION_MS}`, value: periodMs };
  // burst is gcra's and token-bucket's own; every other algorithm's is its limit (parsePolicy).
  if (!integerIn(burst, 1, maxLimit)) return { field: "burst", rule: `must be an integer from 1 to ${maxLimit}`, value: burst };
  if (!integerIn(leaseMs, 1, MAX_DURATION_MS)) return { field: "leaseMs", rule: `must be a whole number of ms from 1 to ${MAX_DURATION_MS}`, value: leaseMs };
  if (failMode !== "open" && failMode !== "closed") return { field: "failMode", rule: 'must be "open" or "closed"', value: failMode };
  if (local !== undefined && !validLocal(local, algorithm as string)) return { field: "local", rule: `must be { share } with share from 0 to ${MAX_LOCAL_SHARE} (0 for gcra and sliding-log; none for concurrency and credits)`, value: local };
  if (blockMs !== undefined && (algorithm === "concurrency" || !integerIn(blockMs, MIN_BLOCK_MS, MAX_BLOCK_MS))) {
    return { field: "blockMs", rule: `must be a whole number of ms from ${MIN_BLOCK_MS} to ${MAX_BLOCK_MS} (none for concurrency)`, value: blockMs };
  }
  if (calendar !== undefined && !validCalendar(calendar, algorithm as string)) {
    return { field: "calendar", rule: `must be { unit: ${CALENDAR_UNITS.map((unit) => `"${unit}"`).join(" | ")}, timezone: an IANA zone } (fixed-window and credits only)`, value: calendar };
  }
  if (refillTo !== undefined && (algorithm !== "credits" || calendar === undefined || !integerIn(refillTo, 0, MAX_BUDGET_LIMIT))) {
    return { field: "refillTo", rule: `must be an integer from 0 to ${MAX_BUDGET_LIMIT} (credits with a calendar only)`, value: refillTo };
  }
  return undefined;
}

function validCalendar(calendar: unknown, algorithm: string): boolean {
  if (calendar === null || typeof calendar !== "object" || (algorithm !== "fixed-window" && algorithm !== "credits")) return false;
  const { unit, timezone } = calendar as { unit?: unknown; timezone?: unknown };
  return CALENDAR_UNITS.includes(unit as never) && typeof timezone === "string" && knownTimezone(timezone) !== undefined;
}

function validLocal(local: unknown, algorithm: string): boolean {
  // Credits: a top-up would not reach a local cache (parsePolicy refuses it too).
  if (local === null || typeof local !== "object" || algorithm === "concurrency" || algorithm === "credits") return false;
  const share = (local as { share?: unknown }).share;
  if (typeof share !== "number" || !(share >= 0 && share <= MAX_LOCAL_SHARE)) return false;
  return share === 0 || LEASABLE_ALGORITHMS.has(algorithm);
}

function integerIn(value: unknown, min: number, max: number): boolean {
  return typeof value === "number" && Number.isInteger(value) && value >= min && value <= max;
}
