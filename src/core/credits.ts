import type { Algorithm } from "./algorithm.js";
import { calendarWindow } from "./calendar.js";
import type { CreditsChange, Policy } from "./types.js";
import { ValidationError, describeValue } from "./validation.js";

/**
 * A balance (policy `credits`): what is left to spend, and, for a policy with a refill, the
 * start of the refill window it belongs to (0 without a refill). A window later than now's
 * holds a reservation that waited for the refill (as a fixed window's future window does).
 */
export interface CreditsState {
  balance: number;
  windowStartMs: number;
}

/**
 * When a balance that is not a fresh one would expire: never. A spent balance without a refill
 * is the customer's money, not a rate: it must not reset by expiring (docs/limits.md, "Credits").
 * The largest time a Date (and a Durable Object alarm) can hold.
 */
export const NEVER_FRESH_MS = 8_640_000_000_000_000;

/** The most a refund raises a balance to (a balance past 2^53 would lose whole units). */
const REFUND_BALANCE_CAP = 1e15;

/** Start of the refill window holding timeMs (0 without a refill: one window for ever). */
function refillStartOf(policy: Policy, timeMs: number): number {
  return policy.calendar ? calendarWindow(policy.calendar, timeMs).startMs : 0;
}

/** What a balance is back to at each refill. */
export function refillToOf(policy: Policy): number {
  return policy.refillTo ?? policy.limit;
}

/**
 * The balance at timeMs: `limit` for a key never seen; the refill's amount in a later window
 * than the state's; 0 while the state's window is still to come (a reservation holds it).
 */
function balanceAt(state: CreditsState | undefined, policy: Policy, timeMs: number): number {
  if (!state) return policy.limit;
  if (!policy.calendar) return state.balance;
  const startMs = refillStartOf(policy, timeMs);
  if (state.windowStartMs < startMs) return refillToOf(policy);
  return state.windowStartMs > startMs ? 0 : state.balance;
}

/**
 * A balance per (key, policy): a key never seen starts at `limit`; an admission spends its cost,
 * all-or-nothing; only a credits change (add, set) or the refill raises it. Not monotone in
 * one corner: a balance topped up above the refill's amount falls back to it at the boundary,
 * so a reservation that another policy of the stack pushes past that boundary is asked again
 * there (fitsAt) and refused when the refilled balance would not cover it.
 */
export const credits: Algorithm<CreditsState> = {
  earliestMs(state, policy, nowMs, cost) {
    const refillTo = refillToOf(policy);
    if (state && policy.calendar && state.windowStartMs > refillStartOf(policy, nowMs)) {
      // A reservation holds the next window: from its start, on what it left.
      if (state.balance >= cost) return state.windowStartMs;
      return cost <= refillTo ? calendarWindow(policy.calendar, state.windowStartMs).endMs : null;
    }
    if (balanceAt(state, policy, nowMs) >= cost) return nowMs;
    if (!policy.calendar || cost > refillTo) return null;
    return calendarWindow(policy.calendar, nowMs).endMs;
  },
  admit(state, policy, nowMs, atMs, cost) {
    if (!policy.calendar) return { balance: (state ? state.balance : policy.limit) - cost, windowStartMs: 0 };
    const startMs = refillStartOf(policy, atMs);
    if (state && state.windowStartMs >= startMs) return { balance: state.balance - cost, windowStartMs: state.windowStartMs };
    // A key never seen spends its `limit` in the window it is first seen in; after a boundary the refill's amount.
    const base = !state && startMs === refillStartOf(policy, nowMs) ? policy.limit : refillToOf(policy);
    return { balance: base - cost, windowStartMs: startMs };
  },
  standing(state, policy, nowMs) {
    const remaining = Math.max(0, balanceAt(state, policy, nowMs));
    // Without a refill nothing resets a balance: resetMs 0 (docs/limits.md).
    if (!state || !policy.calendar) return { remaining, resetMs: 0 };
    const startMs = Math.max(state.windowStartMs, refillStartOf(policy, nowMs));
    return { remaining, resetMs: calendarWindow(policy.calendar, startMs).endMs - nowMs };
  },
  fitsAt: (state, policy, nowMs, atMs, cost) => creditsFitAt(state, policy, nowMs, atMs, cost),
  refund(state, policy, nowMs, amount, spentAtMs) {
    // Back to the balance of the refill window the units were spent in (a later window was
    // refilled: nothing to return there); a key never seen holds its `limit` already.
    if (!state) return undefined;
    if (policy.calendar && state.windowStartMs !== refillStartOf(policy, spentAtMs ?? Math.max(nowMs, state.windowStartMs))) return state;
    return { balance: Math.min(REFUND_BALANCE_CAP, state.balance + amount), windowStartMs: state.windowStartMs };
  },
  freshAtMs(state, policy) {
    if (!policy.calendar) return state.balance === policy.limit ? 0 : NEVER_FRESH_MS;
    // After its window the balance is the refill's amount: fresh only when that is `limit`.
    return refillToOf(policy) === policy.limit ? calendarWindow(policy.calendar, state.windowStartMs).endMs : NEVER_FRESH_MS;
  },
};

/**
 * Whether `cost` fits the balance at atMs (a slot later than nowMs that another policy of the
 * stack chose): credits is the one algorithm that is not monotone (a balance topped up above
 * its refill's amount falls back to it at the boundary), so decide() asks it again at the slot.
 */
export function creditsFitAt(state: CreditsState | undefined, policy: Policy, nowMs: number, atMs: number, cost: number): boolean {
  if (!policy.calendar) return (state ? state.balance : policy.limit) >= cost;
  const startMs = refillStartOf(policy, atMs);
  if (state && state.windowStartMs >= startMs) return state.balance >= cost;
  return (!state && startMs === refillStartOf(policy, nowMs) ? policy.limit : refillToOf(policy)) >= cost;
}

/**
 * The state after a credits change at nowMs (POST /v1/credits): `add` raises the balance as
 * it stands now (a key never seen from `limit`), `set` sets it; both in now's refill window
 * (or the later one a reservation holds).
 */
export function changeCredits(state: CreditsState | undefined, policy: Policy, nowMs: number, change: CreditsChange): CreditsState {
  const startMs = refillStartOf(policy, nowMs);
  const windowStartMs = state && state.windowStartMs > startMs ? state.windowStartMs : startMs;
  if ("set" in change) return { balance: change.set, windowStartMs };
  const base = state && state.windowStartMs > startMs ? state.balance : balanceAt(state, policy, nowMs);
  return { balance: base + change.add, windowStartMs };
}

/**
 * The most a balance holds (and so the most one change may add or set): past 2^53 a number
 * loses units, past 2^63 Redis's integers wrap, and a balance of a quadrillion units is no
 * customer's. A change that would take a balance past it is refused, nothing changed.
 */
export const MAX_BALANCE = 1e15;

/**
 * The refusal of a credits change that would take the balance past MAX_BALANCE (field `add`:
 * only an add can, a set is refused past it when parsed), or undefined when it fits.
 */
export function pastBalanceCap(before: number, after: CreditsState): string | undefined {
  if (after.balance <= MAX_BALANCE) return undefined;
  return `would take the balance to ${after.balance}, past the most a balance holds (${MAX_BALANCE}); it holds ${Math.max(0, before)}`;
}

/**
 * Refuses a credits change that is not `{ add }` or `{ set }` with an integer 0 … 1e15, or one
 * on a policy that is not `credits` (ValidationError naming `policy`, as the HTTP API answers).
 */
export function assertCreditsChange(policy: Policy, change: unknown): asserts change is CreditsChange {
  if (policy.algorithm !== "credits") {
    throw new ValidationError("policy", `"${policy.name}" is ${policy.algorithm}; /v1/credits changes the balance of a credits policy`);
  }
  if (change === null || typeof change !== "object" || Array.isArray(change)) throw new ValidationError("add", `give add or set, got ${describeValue(change)}`);
  const { add, set } = change as { add?: unknown; set?: unknown };
  if ((add === undefined) === (set === undefined)) throw new ValidationError(add === undefined ? "add" : "set", "give exactly one of add and set");
  const field = add !== undefined ? "add" : "set";
  const value = add ?? set;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > MAX_BALANCE) {
    throw new ValidationError(field, `must be an integer from 0 to ${MAX_BALANCE}, got ${describeValue(value)}`);
  }
}

/** A store's answer to a credits change: the balance after it, or why it was refused (field `add`). */
export interface CreditsOutcome {
  remaining: number;
  /** Set when the change would take the balance past MAX_BALANCE: nothing changed. */
  refused?: string;
}

/** What a store answers for an outcome: the result, or the ValidationError naming `add`. */
export function creditsAnswer(outcome: CreditsOutcome): { remaining: number } {
  if (outcome.refused !== undefined) throw new ValidationError("add", outcome.refused);
  return { remaining: outcome.remaining };
}
