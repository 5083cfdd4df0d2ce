import { describeValue } from "../core/validation.js";
import type { Decision } from "../core/types.js";
import type { Target } from "./target.js";

/** The most one reservation or settle may count (SPEC §2). */
const MAX_COST = 1e9;

/**
 * Units reserved ahead of a call whose cost is known only after it (an LLM call's tokens):
 * Throttle.reserve() waited for a slot of `estimate` units; `settle(used)` then debits
 * used − estimate, once: unused units go back to the window they were reserved in, an excess
 * is charged past the limit (the key's later calls wait it out).
 *
 * @example
 * const reservation = await throttle.reserve(4096);
 * const completion = await openai.chat.completions.create({ model, messages, max_tokens: 4096 });
 * await reservation.settle(completion.usage?.total_tokens);
 */
export class Reservation {
  readonly estimate: number;
  /** As a Ticket's: how long the slot was waited for, the limiter's answer, and whether it was handed over. */
  readonly waitedMs: number;
  readonly decision: Decision;
  readonly handedOver: boolean;
  /** When the reserved units count as spent (the slot's time): a refund goes to its window. */
  readonly spentAtMs: number;
  readonly #target: Target;
  #settled: number | undefined;

  /** `ticket`: the slot Throttle.wait booked (a Ticket: named by shape, throttle.ts imports this file). */
  constructor(target: Target, estimate: number, ticket: { waitedMs: number; decision: Decision; handedOver: boolean }, spentAtMs: number) {
    this.#target = target;
    this.estimate = estimate;
    this.waitedMs = ticket.waitedMs;
    this.decision = ticket.decision;
    this.handedOver = ticket.handedOver;
    this.spentAtMs = spentAtMs;
  }

  /** Whether settle() was called. */
  get settled(): boolean {
    return this.#settled !== undefined;
  }

  /**
   * Settles with what the call used: an integer from 0 to 1e9, or undefined when it is not
   * known (an answer without usage, a call that failed midway), which keeps the reservation
   * as it is: hiding usage never costs less than showing it. Resolves with the key's state after
   * the settle, or undefined when nothing had to change (used = estimate, or undefined). Once:
   * a second call throws. A settle the limiter fails rejects (LimiterUnavailableError) and the
   * reservation stands; a reservation never settled stands too.
   */
  settle(used: number | undefined): Promise<Decision | undefined> {
    if (used !== undefined && (typeof used !== "number" || !Number.isInteger(used) || used < 0 || used > MAX_COST)) {
      throw new TypeError(`settle: used must be an integer from 0 to ${MAX_COST} (the units the call used) or undefined (not known: the reservation stands), got ${describeValue(used)}`);
    }
    if (this.#settled !== undefined) throw new Error(`settle: this reservation was settled already (with ${this.#settled}): a reservation settles once`);
    this.#settled = used ?? this.estimate;
    const difference = this.#settled - this.estimate;
    if (difference === 0) return Promise.resolve(undefined);
    return this.#target.debit(difference, this.spentAtMs);
  }
}
