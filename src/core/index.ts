/**
 * `spillway/core`: the pure algorithms. No I/O; time is passed in.
 *
 * @example
 * import { KeyState, parsePolicy } from "spillway/core";
 * const perSecond = parsePolicy({ name: "per-second", limit: 5, period: "1s" }, "policy");
 * const { decision } = new KeyState().check([perSecond], Date.now(), { cost: 1, mode: "reject", maxWaitMs: 0 });
 */
export { decide, type DecideInput, type DecideOutput, type StateChange } from "./decision.js";
export { debit, assertDebitable } from "./debit.js";
export { KeyState } from "./key-state.js";
export { parsePolicy, parsePolicyList, resolvePolicies, UnknownPolicyError, type PolicyCatalog } from "./policy.js";
export { parseDurationMs, MAX_DURATION_MS } from "./duration.js";
export { rateLimitHeaders, retryAfterSeconds } from "./headers.js";
export { ValidationError } from "./validation.js";
export type { StoredState } from "./algorithms.js";
export { calendarWindow, type CalendarSpec, type CalendarUnit, type CalendarWindow } from "./calendar.js";
export * from "./types.js";
