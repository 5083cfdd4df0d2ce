import { describeValue } from "../core/validation.js";
import { MAX_COST, type UsageWarnings, reportedCost } from "./counting.js";
import type { CountedOutcome } from "./count-limit.js";
import type { LimitContext } from "./limit.js";

type Fields = Record<string, string>;

/**
 * A reservation rateLimit() took for one request (option `estimate`) and its one settle: the
 * handler's `c.get("rateLimit").settle(used)` / `req.rateLimit.settle(used)`, or the
 * middleware's own from `cost.response` when the handler did not settle. Runtime-neutral.
 */
export interface HeldReservation {
  readonly estimate: number;
  /** Settles with what the request used (see settleOf); throws when it was settled already. */
  settle(used: unknown, option?: string): Promise<Fields>;
  /** The settle under way or done (undefined: nobody settled yet). */
  readonly settling: Promise<Fields> | undefined;
}

/**
 * Wraps a reservation's engine settle (count-reserve.ts: debits used − estimate, a refund when
 * negative, spent at the reservation's time). `used` by the rule of every reported cost: a
 * whole number is the cost (clamped to 1e9); anything else (undefined: the model's answer had
 * no usage) keeps the reservation as it is, logged (`usage-unusable`): hiding usage never costs
 * less than showing it. Once: a second settle throws, naming the first; a handler that throws or
 * never settles keeps its reservation (the estimate is what it cost). The promise never rejects
 * for a store failure: the engine logs it (`debit-failed`), and the reservation stands.
 */
export function holdReservation(outcome: CountedOutcome & { admitted: true }, estimate: number, warnings: UsageWarnings, context: LimitContext): HeldReservation {
  let settling: Promise<Fields> | undefined;
  let first: number | undefined;
  return {
    estimate,
    get settling() {
      return settling;
    },
    settle(used: unknown, option = "settle") {
      if (settling) throw new Error(`rateLimit: settle() was called twice for one request (first with ${first}, now with ${describeValue(used)}): a reservation settles once`);
      const { cost, usable } = reportedCost(used, { missing: estimate, max: MAX_COST });
      if (!usable) warnings.warn(option, { route: context.label, option, value: describeValue(used), cost });
      first = cost;
      settling = Promise.resolve(outcome.settle(cost));
      context.defer?.(settling);
      return settling;
    },
  };
}
